# Metascript — every command a developer or CI needs. `make help` lists them.
SHELL := /usr/bin/env bash
GO ?= go
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
# The real renderers, pinned, run as Go modules (not in go.mod). kustomize v5.8.3 needs Go 1.27.
KUSTOMIZE ?= $(GO) run sigs.k8s.io/kustomize/kustomize/v5@v5.8.2
HELM ?= $(GO) run helm.sh/helm/v3/cmd/helm@v3.22.0
RENDERED := bin/rendered
BIN := bin/metascript
# What `metascript version` prints: the nearest tag (dev without one); the commit is recorded by go build.
VERSION ?= $(shell git describe --tags --dirty 2>/dev/null || echo dev)
CLUSTER_DIR := .cluster
KUBECONFIG_FILE := $(CLUSTER_DIR)/kubeconfig
PARENTS ?= 200
CHILDREN ?= 5
INPUTS ?= 1000
# e.g. CONVERGE_FLAGS='-workers=8 -qps=1000 -burst=2000' (defaults: metascript run's 4, 50, 100)
CONVERGE_FLAGS ?=
# bench-scale's own default scale, unless PARENTS or CHILDREN is given (command line or environment)
SCALE_PARENTS = $(if $(filter file,$(origin PARENTS)),2000,$(PARENTS))
SCALE_CHILDREN = $(if $(filter file,$(origin CHILDREN)),5,$(CHILDREN))
# bench-neighbors' own defaults, unless PARENTS or CHILDREN is given
NEIGHBORS_PARENTS = $(if $(filter file,$(origin PARENTS)),200,$(PARENTS))
NEIGHBORS_CHILDREN = $(if $(filter file,$(origin CHILDREN)),3,$(CHILDREN))
# e.g. NEIGHBORS_FLAGS='-noisy=50 -runs=5 -pprof=/tmp/neighbors' (CPU profiles of the engine)
NEIGHBORS_FLAGS ?=
# the many-builds neighbour's controllers (TestBuildNeighbours; its library is edited every -edit, default 3s)
NEIGHBORS_BUILDS ?= 60
# e.g. SCALE_FLAGS='-pprof' (CPU profiles), '-floor-apply' or '-floor-child-writers=8' (floor variants), '-engine-args=--memory-limit=512Mi'
SCALE_FLAGS ?=
# bench-shards' member counts, one run each (PARENTS x CHILDREN default 2000 x 5)
MEMBERS ?= 1,2,3
# bench-tenants' controller counts, one run each; e.g. TENANTS_FLAGS='-pprof' (CPU and heap profiles),
# TENANTS_FLAGS='-namespaced' (each a NamespacedCompositeController in its own namespace)
TENANTS ?= 100,1000,5000
TENANTS_FLAGS ?=

.PHONY: help build generate controlplane cluster-up cluster-down demo test test-unit test-race \
        test-integration test-e2e vet bench bench-hooks bench-engine bench-converge bench-map bench-scale bench-tenants \
        bench-neighbors bench-shards clean image chart-crds manifests-check types check-types docs

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

build: ## build bin/metascript
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/metascript

generate: ## regenerate DeepCopy and the CRDs in manifests/crds from apis/ (and their copies in the chart)
	$(CONTROLLER_GEN) object paths=./apis/... crd:crdVersions=v1 output:crd:dir=./manifests/crds
	@$(MAKE) --no-print-directory chart-crds

docs: ## regenerate the field tables of docs/reference from apis/ (docs and hack/docgen tests check them)
	$(GO) run ./hack/docgen

chart-crds: ## copy manifests/crds into charts/metascript/crds (test/manifests checks they are identical)
	rm -f charts/metascript/crds/*.yaml
	cp manifests/crds/metascript.dev_*.yaml charts/metascript/crds/

manifests-check: controlplane ## render the kustomize overlays and the Helm chart (each mode) with the real tools; dry-run every object on a local API server; compare them
	@rm -rf $(RENDERED) && mkdir -p $(RENDERED)
	$(KUSTOMIZE) build manifests > $(RENDERED)/kustomize-single.yaml
	$(KUSTOMIZE) build manifests/overlays/ha > $(RENDERED)/kustomize-ha.yaml
	$(KUSTOMIZE) build manifests/overlays/sharded > $(RENDERED)/kustomize-sharded.yaml
	$(KUSTOMIZE) build manifests/admission > $(RENDERED)/kustomize-admission.yaml
	$(HELM) lint --strict charts/metascript
	$(HELM) template metascript charts/metascript --namespace metascript-system --include-crds --set mode=single > $(RENDERED)/helm-single.yaml
	$(HELM) template metascript charts/metascript --namespace metascript-system --include-crds --set mode=ha > $(RENDERED)/helm-ha.yaml
	$(HELM) template metascript charts/metascript --namespace metascript-system --include-crds --set mode=sharded > $(RENDERED)/helm-sharded.yaml
	$(HELM) template metascript charts/metascript --namespace metascript-system --set mode=ha --set serviceMonitor.enabled=true > $(RENDERED)/helm-ha-servicemonitor.yaml
	$(GO) test -count=1 ./test/manifests/rendered/ -rendered=$(CURDIR)/$(RENDERED)

# The TypeScript compiler check-types runs, pinned in types/package-lock.json.
TSC := types/node_modules/.bin/tsc

types: ## regenerate types/metascript.d.ts, the declarations of JavaScript hooks, from apis/hooks and the stdlib
	$(GO) run ./cmd/metascript types -o types

$(TSC): types/package.json types/package-lock.json
	cd types && npm ci --no-audit --no-fund
	@touch $@

check-types: $(TSC) ## tsc over types/examples and every example controller's JavaScript, against types/metascript.d.ts (~1 s warm; cold, npm ci fetches 20 MB first: ~3 s here)
	$(GO) test -count=1 -run '^TestTypeCheck$$' ./types/ -tsc=$(CURDIR)/$(TSC)

controlplane: ## build etcd and kube-apiserver into .cache/ (cold: ~8 minutes, then cached)
	@bash test/controlplane/build.sh >/dev/null

cluster-up: controlplane ## start a local control plane in the background; writes .cluster/kubeconfig
	@bash test/controlplane/cluster.sh up $(CLUSTER_DIR)

cluster-down: ## stop the local control plane and remove its data
	@bash test/controlplane/cluster.sh down $(CLUSTER_DIR)

demo: build cluster-up ## control plane, CRDs, the engine and an example controller converging
	@bash examples/demo.sh $(KUBECONFIG_FILE) $(BIN)

test: vet check-types controlplane test-race test-integration manifests-check ## every test suite (what CI runs), and the rendered manifests

vet: ## gofmt and go vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

test-unit: ## unit tests (no control plane)
	$(GO) test -count=1 ./apis/... ./scripting/... ./stdlib/... ./cmd/... ./types/... ./hack/... ./docs/...

test-race: ## unit tests under the race detector
	$(GO) test -count=1 -race ./apis/... ./scripting/... ./stdlib/... ./cmd/... ./types/... ./hack/... ./docs/...

test-integration: controlplane ## engine and integration tests under the race detector, then e2e tests, against a real kube-apiserver and etcd
	$(GO) test -count=1 -timeout 30m -p 1 -race ./engine/... ./test/integration/...
	@mkdir -p bin; rm -f bin/skips.txt; status=0; \
	echo "$(GO) test -count=1 -timeout 30m -p 1 ./test/... ./examples/... (but ./test/integration)"; \
	METASCRIPT_SKIPS=$(CURDIR)/bin/skips.txt $(GO) test -count=1 -timeout 30m -p 1 $$($(GO) list ./test/... ./examples/... | grep -v /test/integration) || status=$$?; \
	if [ -s bin/skips.txt ]; then echo "skipped, for what this machine lacks:"; sed 's/^/  /' bin/skips.txt; fi; exit $$status

bench: bench-hooks bench-engine ## every benchmark that needs no cluster

bench-engine: ## a no-op sync of a converged parent, the up-to-date check, routing a related-object event
	$(GO) test -run '^$$' -bench . -benchmem ./engine/...

bench-hooks: ## hook calls (go, starlark, javascript, isolated tier, webhook, bare goja; 10 and 1000 children) and runaway hooks
	$(GO) test -run '^$$' -bench 'Sync|Runaway' -benchmem ./scripting/bench/

bench-converge: controlplane ## PARENTS x CHILDREN from cold start vs a bare client-go program
	$(GO) test -count=1 -timeout 30m -run '^TestConverge$$' -v ./test/converge/ -parents=$(PARENTS) -children=$(CHILDREN) $(CONVERGE_FLAGS)

bench-scale: controlplane ## PARENTS x CHILDREN (default 2000 x 5): the engine as a process vs the client-go floor and Metacontroller (METACONTROLLER_BIN), by the audit log and CPU
	$(GO) test -count=1 -timeout 120m -run '^TestScale$$' -v ./test/scale/ -parents=$(SCALE_PARENTS) -children=$(SCALE_CHILDREN) $(SCALE_FLAGS)

bench-tenants: controlplane ## TENANTS controllers (default 100,1000,5000) on one parent resource, one parent each: converge CPU and wall time, idle CPU, peak RSS, requests
	$(GO) test -count=1 -timeout 180m -run '^TestTenants$$' -v ./test/tenants/ -controllers=$(TENANTS) $(TENANTS_FLAGS)

bench-map: controlplane ## a MapController with INPUTS inputs under one parent: cold start vs bare client-go, one-input changes
	$(GO) test -count=1 -timeout 30m -run '^TestMapBench$$' -v ./test/mapbench/ -inputs=$(INPUTS)

bench-neighbors: controlplane ## a healthy controller (PARENTS x CHILDREN, default 200 x 3) alone and beside hostile tenants: two burning hooks, four hung webhooks, 40 MiB answers (NEIGHBORS_FLAGS=-burn=30s -memory-limit=900Mi -only=...); a new controller beside NEIGHBORS_BUILDS (60) burning builds
	$(GO) test -count=1 -timeout 90m -run '^(TestNeighbors|TestBuildNeighbours)$$' -v ./test/neighbors/ -parents=$(NEIGHBORS_PARENTS) -children=$(NEIGHBORS_CHILDREN) -builds=$(NEIGHBORS_BUILDS) $(NEIGHBORS_FLAGS)

bench-shards: controlplane ## PARENTS x CHILDREN (default 2000 x 5) by MEMBERS (default 1,2,3) engines with --sharding: time, CPU and peak RSS per member
	$(GO) test -count=1 -timeout 60m -run '^TestShardBench$$' -v ./test/shardbench/ -members=$(MEMBERS) -parents=$(SCALE_PARENTS) -children=$(SCALE_CHILDREN)

image: ## build the engine's image localhost/metascript:dev with podman, from scratch (no registry, no base image)
	bash test/image/build.sh localhost/metascript:dev

clean: ## remove build outputs (keeps the control-plane cache)
	rm -rf bin
