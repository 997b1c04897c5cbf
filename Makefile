# Every target runs with Node >= 22.19 on PATH (Node 24 from the npm registry when the machine's is older).
SHELL := /usr/bin/env bash
NODE_BIN := $(shell scripts/ensure-node.sh)
export PATH := $(NODE_BIN):$(PATH)

.PHONY: kind-up setup test test-unit test-integration lint typecheck crd control-plane dev clean

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
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
	@bash test/cluster/build-control-plane.sh >/dev/null

## make dev: the whole system on this machine
dev: setup control-plane
	node scripts/dev.ts

## make kind-up: a kind cluster (needs Docker) with Tether installed from this checkout
kind-up:
	bash scripts/kind-up.sh

clean:
	rm -rf node_modules .tether-state test-results
