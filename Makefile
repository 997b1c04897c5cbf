# Every target runs with Node >= 22.19 on PATH (Node 24 from the npm registry when the machine's is older).
SHELL := /usr/bin/env bash
NODE_BIN := $(shell scripts/ensure-node.sh)
export PATH := $(NODE_BIN):$(PATH)

.PHONY: kind-up setup test test-unit test-integration lint typecheck crd control-plane node-binaries dev clean bench
.PHONY: test-under-load

node_modules/.installed: package.json package-lock.json
	npm ci --include=optional --no-audit --no-fund
	@touch $@

setup: node_modules/.installed

## make test: typecheck, lint, unit and integration tests (builds the local control plane on first use)
test: setup control-plane
	npm test

## make test-under-load: make test's suite with every core kept busy by a busy loop for the whole run
## (scripts/under-load.sh; HOG_NICE=19 for low-priority loops)
test-under-load: setup control-plane
	bash scripts/under-load.sh npm test

test-unit: setup
	npx vitest run --project unit

test-integration: setup control-plane
	npx vitest run --project integration

## make node-binaries: build kubelet and kube-scheduler once (cached, same Kubernetes version as the control plane)
node-binaries:
	@bash local/kubelet-node/build-node.sh >/dev/null

lint: setup
	npm run lint

typecheck: setup
	npm run typecheck

## make crd: regenerate crds/ and the chart's templates/crds/ from common/session/schema.ts
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
.PHONY: images test-node helm-lint helm-template release registry

## make images: build tether-controller, tether-relay and tether-runner (scripts/build-images.sh; with
## no Docker engine it starts a private one, with no image registry it builds the base image's stand-in)
images:
	@bash scripts/build-images.sh $(IMAGE_REGISTRY) $(IMAGE_TAG)

## make release IMAGE_REGISTRY=registry.example.com/tether [VERSION=0.1.0]: build and push the three images
## and the chart (oci://IMAGE_REGISTRY/tether, the images' digests pinned in its values; scripts/release.sh).
## VERSION defaults to charts/tether/Chart.yaml's version; a registry on loopback is spoken to over plain HTTP.
VERSION ?=
release:
	@bash scripts/release.sh $(IMAGE_REGISTRY) $(VERSION)

## make registry: a registry on 127.0.0.1:5000 (REGISTRY_ADDR) with its store in a temp folder, in the
## foreground (the CNCF distribution registry, built once from its Go module: scripts/ensure-registry.sh)
REGISTRY_ADDR ?= 127.0.0.1:5000
registry:
	@store="$$(mktemp -d)" && trap 'rm -rf "$$store"' EXIT && echo "[registry] $(REGISTRY_ADDR), store $$store" && \
	  bash scripts/ensure-registry.sh serve "$$store" $(REGISTRY_ADDR)

## make test-node: build the images as tether.local/*:dev and run the node tier (test/node) against them:
## the images in the engine, and on the kubelet node tier (local/kubelet-node: containerd + kubelet +
## kube-scheduler; needs root and Debian's containerd, runc, containernetworking-plugins, busybox-static, gcc)
test-node: setup control-plane node-binaries
	@$(MAKE) --no-print-directory images IMAGE_REGISTRY=tether.local IMAGE_TAG=dev
	IMAGE_REGISTRY=tether.local IMAGE_TAG=dev npx vitest run --project node

## make helm-lint: helm lint --strict charts/tether with a publicUrl and an API server address (both required
## where nothing is looked up; helm from scripts/ensure-helm.sh)
helm-lint:
	@helm="$$(scripts/ensure-helm.sh)" && "$$helm" lint --strict charts/tether --set relay.publicUrl=https://tether.example.com \
	  --set 'networkPolicy.apiServer.cidrs={192.0.2.10/32}'

## make helm-template: render charts/tether, the CRD included (extra flags: HELM_ARGS="-f my-values.yaml")
helm-template:
	@helm="$$(scripts/ensure-helm.sh)" && "$$helm" template tether charts/tether --namespace tether $(HELM_ARGS)
