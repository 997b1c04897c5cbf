# Every target runs with Node >= 22.19 on PATH (Node 24 from the npm registry when the machine's is older).
SHELL := /usr/bin/env bash
NODE_BIN := $(shell scripts/ensure-node.sh)
export PATH := $(NODE_BIN):$(PATH)

.PHONY: kind-up setup test test-unit test-integration lint typecheck crd control-plane dev clean bench

node_modules/.installed: package.json package-lock.json
	npm ci --include=optional --no-audit --no-fund
	@touch $@

setup: node_modules/.installed

## make test: typecheck, lint, unit and integration tests (builds the local control plane on first use)
test: setup control-plane
	npm test

test-unit: setup
	npx vitest run --project unit

test-integration: setup control-plane
	npx vitest run --project integration

lint: setup
	npm run lint

typecheck: setup
	npm run typecheck

## make crd: regenerate crds/ from common/session/schema.ts
crd: setup
	npm run crd

## make control-plane: build kube-apiserver, kube-controller-manager, kubectl and etcd once (cached)
control-plane:
	@bash local/control-plane/build-control-plane.sh >/dev/null

## make dev: the whole system on this machine
dev: setup control-plane
	node local/dev.ts

## make bench: every benchmark (bench/*.ts), then one table: figure, target, measured, ratio, machine load
bench: setup control-plane
	node bench/run.ts $(BENCH_ARGS)

## make kind-up: a kind cluster (needs Docker) with Tether installed from this checkout
kind-up:
	bash scripts/kind-up.sh

clean:
	rm -rf node_modules .tether-state test-results

## Images and chart (issue 7)
IMAGE_REGISTRY ?= ghcr.io/tether-dev
IMAGE_TAG ?= dev
.PHONY: images helm-lint helm-template

## make images: build tether-controller, tether-relay and tether-runner with Docker (skipped, with a message, without it)
images:
	@if ! command -v docker >/dev/null 2>&1; then echo "make images: docker is not installed; nothing built"; exit 0; fi; \
	if ! docker info >/dev/null 2>&1; then echo "make images: the Docker daemon is not reachable; nothing built"; exit 0; fi; \
	for image in controller:controller relay:relay runner:runner-image; do \
	  name=$${image%%:*}; dir=$${image#*:}; \
	  echo "building $(IMAGE_REGISTRY)/tether-$$name:$(IMAGE_TAG) from $$dir/Dockerfile"; \
	  docker build -f $$dir/Dockerfile -t $(IMAGE_REGISTRY)/tether-$$name:$(IMAGE_TAG) . || exit 1; \
	done

## make helm-lint: helm lint --strict charts/tether (helm from scripts/ensure-helm.sh)
helm-lint:
	@helm="$$(scripts/ensure-helm.sh)" && "$$helm" lint --strict charts/tether

## make helm-template: render charts/tether with the CRD (extra flags: HELM_ARGS="-f my-values.yaml")
helm-template:
	@helm="$$(scripts/ensure-helm.sh)" && "$$helm" template tether charts/tether --namespace tether --include-crds $(HELM_ARGS)
