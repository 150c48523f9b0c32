# siterecovery — build, generate, test.
# Everything runs from the Go module proxy; nothing is installed globally.

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
# golangci-lint is pinned in its own modfile: required from go.mod it would raise
# product dependencies (golang.org/x/*, grpc, otel, logr) to the versions it
# wants. `go tool` builds it from the module proxy on first use (cached after).
GOLANGCI_LINT := $(GO) tool -modfile=tools/golangci-lint/go.mod golangci-lint
BIN := bin
# Integration tests start real kube-apiserver + etcd processes found here.
KUBE_ASSETS = $(shell scripts/dev/kube-binaries.sh)
GO_TEST_FLAGS ?= -timeout 40m
PKGS ?= ./...

.PHONY: all build images console sim-binaries sandbox demo generate kubevirt-crds verify tidy-check kube-binaries kubectl kwok snapshot-controller prometheus test-alerts-e2e test test-unit test-integration test-chart-rbac lint fmt bench bench-scale fault-matrix fault-tests soak bench-volsync clean

all: build

build: console ## Build the product binaries into bin/ (the console with its front end embedded).
	$(GO) build -o $(BIN)/ ./cmd/...

# make images: the OCI images of every binary (tools/images) into $(IMAGES_OUT),
# without a container daemon; REGISTRY=host/org also pushes them there.
# Tags default to the charts' appVersion; labels carry the commit.
IMAGES_OUT ?= $(BIN)/images
VERSION ?= $(shell sed -n 's/^appVersion: "\(.*\)"/\1/p' charts/quorum-control-plane/Chart.yaml)
REGISTRY ?=
# PLATFORMS: the platforms of each image's index (comma-separated linux/<GOARCH>).
PLATFORMS ?= linux/amd64,linux/arm64

images: console ## Build the OCI images of every binary into bin/images (REGISTRY=... pushes them); needs apt lists for drbd-utils.
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct) $(GO) run -C tools/images . -root $(CURDIR) -out $(CURDIR)/$(IMAGES_OUT) \
		-version $(VERSION) -revision $$(git rev-parse HEAD) -registry "$(REGISTRY)" -platforms "$(PLATFORMS)"

CONSOLE_WEB := web/console
CONSOLE_DIST := internal/console/ui/dist

console: $(CONSOLE_WEB)/node_modules/.package-lock.json ## Build the web console's front end into internal/console/ui/dist, which cmd/siterecovery-console embeds.
	find $(CONSOLE_DIST) -mindepth 1 ! -name .gitkeep -delete
	cd $(CONSOLE_WEB) && npm run build

# npm ci only when package-lock.json changed since the last install.
$(CONSOLE_WEB)/node_modules/.package-lock.json: $(CONSOLE_WEB)/package-lock.json
	cd $(CONSOLE_WEB) && npm ci --no-audit --no-fund

sim-binaries: ## Build the DRBD simulator (drbdadm and drbdsetup stand-ins) for the sandbox.
	$(GO) build -o $(BIN)/sim/drbdsim ./test/sim/drbd/cmd/drbdsim
	ln -sf drbdsim $(BIN)/sim/drbdadm
	ln -sf drbdsim $(BIN)/sim/drbdsetup

# VOLSYNC=1 adds a VolSync zone (DR namespace dr-volsync, one group in diff mode);
# OFFLOADED=1 an Offloaded zone (DR namespace dr-offloaded, one group on the
# storage-array simulator).
SANDBOX_FLAGS = $(if $(VOLSYNC),-volsync) $(if $(OFFLOADED),-offloaded)
# OIDC=1 runs a test OIDC issuer the API servers trust; the console offers sign-in with it (alice / alice-password).
SANDBOX_FLAGS += $(if $(OIDC),-oidc)

sandbox: build sim-binaries kube-binaries kwok snapshot-controller ## Run a whole zone on this machine (Ctrl-C stops it; VOLSYNC=1 adds a VolSync zone, OFFLOADED=1 an Offloaded one).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) run ./test/sandbox -bin $(BIN) $(SANDBOX_FLAGS)

demo: build sim-binaries kube-binaries kwok snapshot-controller ## Protect, fail over, fail back, and fail over with the primary down.
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) run ./test/sandbox -bin $(BIN) -demo $(SANDBOX_FLAGS)

generate: ## Regenerate deepcopy code, CRDs and RBAC roles, and copy them into the charts.
	$(CONTROLLER_GEN) object paths=./apis/...
	rm -rf config/crd/bases
	$(CONTROLLER_GEN) crd paths=./apis/... output:crd:artifacts:config=config/crd/bases
	scripts/dev/copy-crds.sh
	@# Each binary's rights, from the +kubebuilder:rbac markers of its tier's packages.
	rm -rf config/rbac
	$(CONTROLLER_GEN) rbac:roleName=quorum-manager paths=./internal/quorum/... output:rbac:artifacts:config=config/rbac/quorum-manager
	$(CONTROLLER_GEN) rbac:roleName=pg-controller paths=./internal/workload/... output:rbac:artifacts:config=config/rbac/pg-controller
	$(CONTROLLER_GEN) rbac:roleName=drbd-node-agent paths=./internal/nodeagent/... output:rbac:artifacts:config=config/rbac/drbd-node-agent
	scripts/dev/copy-rbac.sh

# The KubeVirt CRDs the test clusters install: virt-operator's schema, from
# kubevirt.io/api at go.mod's version (tools/kubevirt-crds says how, and what
# differs). It fails when the schema is not the one virt-operator embeds.
KUBEVIRT_CRDS := test/crds/thirdparty/kubevirt.io_virtualmachines.yaml test/crds/thirdparty/kubevirt.io_virtualmachineinstances.yaml
kubevirt-crds: ## Regenerate test/crds/thirdparty's KubeVirt VirtualMachine and VirtualMachineInstance CRDs.
	$(GO) run -C tools/kubevirt-crds . -root $(CURDIR)

verify: generate kubevirt-crds tidy-check ## Fail when generated files are stale or go.mod is untidy.
	@if [ -n "$$(git status --porcelain -- apis config charts $(KUBEVIRT_CRDS))" ]; then \
		echo "generated files are stale; run 'make generate kubevirt-crds' and commit:"; \
		git status --porcelain -- apis config charts $(KUBEVIRT_CRDS); \
		git --no-pager diff --stat -- apis config charts $(KUBEVIRT_CRDS); exit 1; fi
	@echo "generated files are up to date"

tidy-check: ## Fail when `go mod tidy` would change go.mod or go.sum (of the module or the lint tool).
	$(GO) mod tidy -diff
	cd tools/golangci-lint && $(GO) mod tidy -diff
	cd tools/kubectl && $(GO) mod tidy -diff
	cd tools/kwok && $(GO) mod tidy -diff
	cd tools/snapshot-controller && $(GO) mod tidy -diff
	cd tools/images && $(GO) mod tidy -diff
	cd tools/helm && $(GO) mod tidy -diff
	cd tools/promql && $(GO) mod tidy -diff
	cd tools/promtool && $(GO) mod tidy -diff
	cd tools/kubevirt-crds && $(GO) mod tidy -diff

kube-binaries: ## Build etcd, kube-apiserver, kube-controller-manager and kube-scheduler for the integration tests (cached).
	scripts/dev/kube-binaries.sh

kubectl: ## Build kubectl for the runbook tests (cached; tools/kubectl pins the version).
	scripts/dev/kubectl.sh >/dev/null

kwok: ## Build kwok, the test clusters' nodes (cached; tools/kwok pins the version).
	scripts/dev/kwok.sh >/dev/null

prometheus: ## Build Prometheus's prometheus and promtool for the alert tests and the sandbox (cached; tools/promtool pins the version).
	scripts/dev/prometheus.sh >/dev/null

# The alerts end to end (test/alerts): a replication lag driven past its
# objective on real API servers, seen firing and resolving in a real
# Prometheus that scrapes quorum-manager's secure metrics endpoint, and every
# dashboard panel's query. Not part of `make test`: building prometheus takes
# more than 4 minutes on 2 cores; promtool's rule tests of every alert are.
test-alerts-e2e: kube-binaries prometheus ## The alerts end to end in a real Prometheus (not in make test).
	SITERECOVERY_ALERTS_E2E=1 KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 15m -run '^TestAlertsEndToEnd$$' ./test/alerts/

snapshot-controller: ## Build the CSI snapshot-controller the test clusters that take snapshots run (cached; tools/snapshot-controller pins the version).
	scripts/dev/snapshot-controller.sh >/dev/null

lint: ## gofmt, go vet, golangci-lint (.golangci.yml: import rules by tier, aliases, linters) and shellcheck.
	@bad=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^vendor/')); \
		if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...
	shellcheck -x $$(git ls-files 'scripts/*.sh')

fmt: ## Format the tree: gofmt, and goimports with this module's imports grouped last.
	$(GOLANGCI_LINT) fmt ./...

test: lint test-unit test-integration test-chart-rbac ## Lint, the unit tier with -race, every test on real API servers, and the flows under the charts' roles.

test-unit: ## The unit tier: no API server starts (the harness skips under -short), with the race detector.
	$(GO) test -short -race -count=1 $(PKGS)

test-integration: ## Every test, including those on real kube-apiserver + etcd processes.
	@# Compile every test binary in parallel first, then run the packages one at a
	@# time: each integration package starts up to three API servers, and two such
	@# packages at once overload a 2-core machine into timeouts.
	$(GO) test -count=1 -run '^$$' $(PKGS) >/dev/null
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -p 1 $(GO_TEST_FLAGS) $(PKGS)

# A planned failover and failback, and protecting a VM, with quorum-manager,
# pg-controller and the agents running as the service accounts and roles the
# charts install, not as cluster admin: the generated roles must grant all the
# controllers use.
CHART_RBAC_TESTS = ./internal/quorum/failover:TestPlannedFailoverAndFailback ./internal/quorum/protection:TestProtectionFlow
test-chart-rbac: ## The flows of CHART_RBAC_TESTS under the charts' least-privilege roles (SITERECOVERY_CHART_RBAC=1).
	@set -e; for t in $(CHART_RBAC_TESTS); do \
		SITERECOVERY_CHART_RBAC=1 KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -run "^$${t#*:}\$$" $${t%%:*}; done

FAULT_TESTS = TestAgentDownOnTargetIsNamed|TestFailbackAfterFencedFailover|TestFailbackAfterFencedOffRecordRemoved|TestSilentAgentWakesAtHeartbeatExpiry|TestLeaseTakeoverOnlyAfterExpiry|TestUnplannedFailoverWithPrimaryDown|TestSourceControlPlane|TestPlannedFailoverWithDataPathDown|TestDrainTimeoutFailsSafely|TestBatchBootTimeout|TestForceRemovesTaint|TestQuorumManagerRestartedInEachPhase
fault-tests: ## The failover's partial-failure tests on real API servers (part of test-integration too).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -run '$(FAULT_TESTS)' ./internal/quorum/failover/

SEED ?= 0
fault-matrix: ## Every cell of the failover fault matrix on real API servers (SEED=<n> fixes the rotation; 0 is today's).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 120m -run '^TestFaultMatrix$$' ./internal/quorum/failover/ -args -fault-matrix.all -fault-matrix.seed=$(SEED)

.PHONY: data-fault-matrix protection-fault-matrix
data-fault-matrix: ## Every cell of the data fault matrix: the guest's writes checked through planned failovers with faults (SEED=<n> fixes their order).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 30m -run '^TestDataFaultMatrix$$' ./internal/quorum/protection/ -args -fault-matrix.all -fault-matrix.seed=$(SEED)

protection-fault-matrix: ## Every cell of the protect/unprotect fault matrix on real API servers (SEED=<n> fixes their order).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 90m -run '^TestProtectionFaultMatrix$$' ./internal/quorum/protection/ -args -fault-matrix.all -fault-matrix.seed=$(SEED)

.PHONY: testfailover-fault-matrix drpc-fault-matrix
testfailover-fault-matrix: ## Every cell of the test failover fault matrix on real API servers (SEED=<n> fixes their order).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 60m -run '^TestTestFailoverFaultMatrix$$' ./internal/quorum/testfailover/ -args -fault-matrix.all -fault-matrix.seed=$(SEED)

drpc-fault-matrix: ## Every cell of the DRPC Relocate/Failover fault matrix (Offloaded) on real API servers (SEED=<n> fixes their order).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 60m -run '^TestDRPCFaultMatrix$$' ./internal/quorum/drpc/ -args -fault-matrix.all -fault-matrix.seed=$(SEED)

FAILOVERS ?= 200
soak: ## FAILOVERS planned failovers back and forth, each with a random fault of the matrix (SEED=<n>); prints the figures.
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 12h -run '^TestFaultSoak$$' ./internal/quorum/failover/ -args -fault-soak.failovers=$(FAILOVERS) -fault-soak.seed=$(or $(filter-out 0,$(SEED)),1) $(if $(BUDGET),-fault-soak.budget=$(BUDGET))

# Paired benchmarks (test/benchpair): each product round runs turn by turn with
# a round of its write floor; test/benchtable prints one table of the ratios.
BENCH ?= ^Benchmark(Failover20VMs|ConsensusLatency|SteadyState)$$
BENCH_PKGS ?= ./internal/quorum/failover ./internal/quorum/drpc ./test/steadystate
BENCH_SCALE ?= ^Benchmark(Failover(100|200)VMs|Failover10Groups|ConsensusLatency200|Protect100VMs)$$
BENCH_SCALE_PKGS ?= ./internal/quorum/failover ./internal/quorum/drpc ./internal/quorum/protection

bench: ## The paired benchmarks (about 20 minutes): product over floor per pair, in one table.
	$(GO) test -count=1 -run '^$$' $(BENCH_PKGS) >/dev/null
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -p 1 -count=1 -timeout 60m -run '^$$' -bench '$(BENCH)' -benchtime 1x $(BENCH_PKGS) | $(GO) run ./test/benchtable

bench-volsync: ## VolSync group cycles of 8 and 64 PVCs of 1 GiB: diff bytes over full, cycle time over its write floor.
	$(GO) test -count=1 -run '^$$' ./internal/workload/volsync >/dev/null
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -p 1 -count=1 -timeout 30m -run '^$$' -bench '^BenchmarkGroupCycle' -benchtime 1x ./internal/workload/volsync | $(GO) run ./test/benchtable

bench-scale: ## The scale curve: 100 and 200 VMs, 10 groups at once, 200 DRPCs, protecting 100 VMs (an hour or more).
	$(GO) test -count=1 -run '^$$' $(BENCH_SCALE_PKGS) >/dev/null
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -p 1 -count=1 -timeout 180m -run '^$$' -bench '$(BENCH_SCALE)' -benchtime 1x $(BENCH_SCALE_PKGS) | $(GO) run ./test/benchtable

clean:
	rm -rf $(BIN)
