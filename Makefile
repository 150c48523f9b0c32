# siterecovery — build, generate, test.
# Everything runs from the Go module proxy; nothing is installed globally.

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
# golangci-lint is pinned in its own modfile: required from go.mod it would raise
# product dependencies (golang.org/x/*, grpc, otel, logr) to the versions it
# wants. `go tool` builds it from the module proxy on first use (cached after).
GOLANGCI_LINT := $(GO) tool -modfile=$(CURDIR)/tools/golangci-lint/go.mod golangci-lint
# gotestsum runs the integration tier: go test's own output (standard-quiet),
# plus a JSON record of every test from which it prints the slowest, so that
# each CI log says where its time went. Pinned in its own modfile too.
GOTESTSUM := $(GO) tool -modfile=$(CURDIR)/tools/gotestsum/go.mod gotestsum
BIN := bin
# Integration tests start real kube-apiserver + etcd processes found here.
KUBE_ASSETS = $(shell hack/kube-binaries.sh)
GO_TEST_FLAGS ?= -timeout 40m
PKGS ?= ./...
SLOWEST_THRESHOLD ?= 15s
INTEGRATION_P ?= 2
# The browser tests (test/console) are a module of their own, so that chromedp
# stays out of the product's go.mod. The test targets run them beside PKGS:
# all of them for ./..., and those PKGS names under test/console.
BROWSER_MOD := test/console
ROOT_PKGS = $(filter-out ./$(BROWSER_MOD) ./$(BROWSER_MOD)/%,$(PKGS))
BROWSER_PKGS = $(if $(filter ./...,$(PKGS)),./...,$(patsubst ./$(BROWSER_MOD)%,.%,$(filter ./$(BROWSER_MOD) ./$(BROWSER_MOD)/%,$(PKGS))))

.PHONY: all help build images images-lock console sim-binaries sandbox demo generate kubevirt-crds verify tidy-check kube-binaries kubectl kwok snapshot-controller prometheus test-alerts-e2e test test-unit test-integration test-chart-rbac lint fmt clean

all: build ## The default: make build.

help: ## List every target with what it does (the `## ` text of its rule, in the Makefile and hack/make/*.mk).
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-zA-Z0-9][a-zA-Z0-9_.-]*:[^=]*## / {printf "  %-26s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

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

images-lock: ## Pin the agent image's Debian packages (images/drbd-node-agent/packages.lock) at the versions and digests of the machine's apt lists, for PLATFORMS.
	$(GO) run -C tools/images . -root $(CURDIR) -update-lock -platforms "$(PLATFORMS)"

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
# PROMETHEUS=1 runs a Prometheus (built from the module proxy, cached) that
# scrapes each quorum-manager's secure metrics with a token, as the quorum
# chart's ServiceMonitor does, and evaluates the chart's alert rules.
SANDBOX_FLAGS += $(if $(PROMETHEUS),-prometheus $(shell hack/prometheus.sh prometheus)/prometheus)

sandbox: build sim-binaries kube-binaries kwok snapshot-controller ## Run a whole zone on this machine (Ctrl-C stops it; VOLSYNC=1 adds a VolSync zone, OFFLOADED=1 an Offloaded one, PROMETHEUS=1 a Prometheus with the chart's alerts).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) run ./test/sandbox -bin $(BIN) $(SANDBOX_FLAGS)

demo: build sim-binaries kube-binaries kwok snapshot-controller ## Protect, fail over, fail back, and fail over with the primary down.
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) run ./test/sandbox -bin $(BIN) -demo $(SANDBOX_FLAGS)

generate: ## Regenerate deepcopy code, CRDs and RBAC roles, and copy them into the charts.
	$(CONTROLLER_GEN) object paths=./apis/...
	rm -rf config/crd/bases
	$(CONTROLLER_GEN) crd paths=./apis/... output:crd:artifacts:config=config/crd/bases
	hack/copy-crds.sh
	@# Each binary's rights, from the +kubebuilder:rbac markers of its tier's packages.
	rm -rf config/rbac
	$(CONTROLLER_GEN) rbac:roleName=quorum-manager paths=./internal/quorum/... output:rbac:artifacts:config=config/rbac/quorum-manager
	$(CONTROLLER_GEN) rbac:roleName=pg-controller paths=./internal/workload/... output:rbac:artifacts:config=config/rbac/pg-controller
	$(CONTROLLER_GEN) rbac:roleName=drbd-node-agent paths=./internal/nodeagent/... output:rbac:artifacts:config=config/rbac/drbd-node-agent
	hack/copy-rbac.sh

# The KubeVirt CRDs the test clusters install: virt-operator's schema, from
# kubevirt.io/api at go.mod's version (tools/kubevirt-crds says how, and what
# differs). It fails when the schema is not the one virt-operator embeds.
KUBEVIRT_CRDS := test/crds/thirdparty/kubevirt.io_virtualmachines.yaml test/crds/thirdparty/kubevirt.io_virtualmachineinstances.yaml \
	test/crds/instancetype/instancetype.kubevirt.io_virtualmachineinstancetypes.yaml test/crds/instancetype/instancetype.kubevirt.io_virtualmachinepreferences.yaml
kubevirt-crds: ## Regenerate the KubeVirt CRDs the tests install: VirtualMachine and VirtualMachineInstance (test/crds/thirdparty), VirtualMachineInstancetype and VirtualMachinePreference (test/crds/instancetype).
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
	cd tools/gotestsum && $(GO) mod tidy -diff
	cd $(BROWSER_MOD) && $(GO) mod tidy -diff

kube-binaries: ## Build etcd, kube-apiserver, kube-controller-manager and kube-scheduler for the integration tests (cached).
	hack/kube-binaries.sh

kubectl: ## Build kubectl for the runbook tests (cached; tools/kubectl pins the version).
	hack/kubectl.sh >/dev/null

kwok: ## Build kwok, the test clusters' nodes (cached; tools/kwok pins the version).
	hack/kwok.sh >/dev/null

prometheus: ## Build Prometheus's prometheus and promtool for the alert tests and the sandbox (cached; tools/promtool pins the version).
	hack/prometheus.sh >/dev/null

# The alerts end to end (test/alerts): a replication lag driven past its
# objective on real API servers, seen firing and resolving in a real
# Prometheus that scrapes quorum-manager's secure metrics endpoint, and every
# dashboard panel's query. Not part of `make test`: building prometheus takes
# more than 4 minutes on 2 cores; promtool's rule tests of every alert are.
test-alerts-e2e: kube-binaries prometheus ## The alerts end to end in a real Prometheus (not in make test).
	SITERECOVERY_ALERTS_E2E=1 KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 15m -run '^TestAlertsEndToEnd$$' ./test/alerts/

snapshot-controller: ## Build the CSI snapshot-controller the test clusters that take snapshots run (cached; tools/snapshot-controller pins the version).
	hack/snapshot-controller.sh >/dev/null

lint: ## gofmt, golangci-lint (.golangci.yml: go vet's analyzers, import rules by tier, aliases, linters) and shellcheck.
	@bad=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^vendor/')); \
		if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	@# golangci-lint's govet runs go vet's default analyzers, tests included:
	@# a separate go vet would type-check the whole tree a second time.
	@# --allow-parallel-runners: a second checkout linting on the same machine
	@# waits for the first instead of failing.
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...
	cd $(BROWSER_MOD) && $(GOLANGCI_LINT) run --allow-parallel-runners ./...
	shellcheck -x $$(git ls-files 'scripts/*.sh' 'hack/*.sh')

fmt: ## Format the tree: gofmt, and goimports with this module's imports grouped last.
	$(GOLANGCI_LINT) fmt ./...

test: lint test-unit test-integration ## Lint, the unit tier with -race, every test on real API servers, and (with PKGS=./...) the flows under the charts' roles.

test-unit: ## The unit tier: no API server starts (the harness skips under -short), with the race detector.
	$(if $(ROOT_PKGS),$(GO) test -short -race -count=1 $(ROOT_PKGS))
	$(if $(BROWSER_PKGS),cd $(BROWSER_MOD) && $(GO) test -short -race -count=1 $(BROWSER_PKGS))

test-integration: ## Every test, including those on real kube-apiserver + etcd processes; with PKGS=./... also test-chart-rbac.
	@# Compile every test binary in parallel first, then run INTEGRATION_P
	@# packages at a time. Each integration package starts up to three API
	@# servers with their controllers, but most of a flow's time is spent
	@# waiting (timers of the simulated VMs and DRBD, requeues, watches), so two
	@# packages share a 2-core machine without starving each other: the flows'
	@# waits are bounded in tens of seconds, and they pass at far higher load.
	$(if $(ROOT_PKGS),$(GO) test -count=1 -run '^$$' $(ROOT_PKGS) >/dev/null)
	$(if $(BROWSER_PKGS),cd $(BROWSER_MOD) && $(GO) test -count=1 -run '^$$' $(BROWSER_PKGS) >/dev/null)
	@# The flows of CHART_RBAC_TESTS run once, under the charts' roles
	@# (test-chart-rbac): an admin run of them would prove nothing more. In a
	@# whole run they go in the background after the browser module's tests,
	@# beside the root module's packages, and their output follows.
	@# The slowest tests (over SLOWEST_THRESHOLD) are printed after the run,
	@# whether it passed or not.
	@mkdir -p $(BIN)
	@rc=0; : >$(BIN)/test-integration.json; export KUBEBUILDER_ASSETS="$(KUBE_ASSETS)"; \
	$(if $(BROWSER_PKGS)$(WHOLE_RUN),( f=0; \
		$(if $(BROWSER_PKGS),(cd $(BROWSER_MOD) && $(GOTESTSUM) --format standard-quiet --jsonfile $(CURDIR)/$(BIN)/test-integration-browser.json -- \
			$(GO_TEST_FLAGS) $(BROWSER_PKGS)) >$(BIN)/test-integration-browser.log 2>&1 || f=1;) \
		$(if $(WHOLE_RUN),($(CHART_RBAC_RUN)) >$(BIN)/test-chart-rbac.log 2>&1 || f=1;) \
		exit $$f) & beside=$$!;) \
	$(if $(ROOT_PKGS),$(GOTESTSUM) --format standard-quiet --jsonfile $(BIN)/test-integration.json -- \
		-p $(INTEGRATION_P) $(GO_TEST_FLAGS) -skip '$(CHART_RBAC_SKIP)' $(INTEGRATION_PKGS) || rc=$$?;) \
	$(if $(BROWSER_PKGS)$(WHOLE_RUN),wait $$beside || rc=$$?; \
		$(if $(BROWSER_PKGS),cat $(BIN)/test-integration-browser.log; \
			cat $(BIN)/test-integration-browser.json >>$(BIN)/test-integration.json 2>/dev/null;) \
		$(if $(WHOLE_RUN),echo "test-chart-rbac:"; cat $(BIN)/test-chart-rbac.log 2>/dev/null;)) \
	echo "slowest tests (over $(SLOWEST_THRESHOLD)):"; \
	$(GOTESTSUM) tool slowest --jsonfile $(BIN)/test-integration.json --threshold $(SLOWEST_THRESHOLD) || true; \
	exit $$rc

# A whole run (PKGS=./...) runs test-chart-rbac inside test-integration.
WHOLE_RUN = $(filter ./...,$(PKGS))
# go test starts the packages of a run in the order it is given them. In a
# whole run the slowest integration packages (CI's per-package times) start
# first, so that the end of the run is small packages filling both slots
# rather than one long package running alone.
SLOW_FIRST := ./test/e2e/failover ./test/e2e/protection ./test/e2e/testfailover ./test/e2e/drpc ./test/charts ./test/e2e/volsync ./test/images ./test/installdoc
INTEGRATION_PKGS = $(if $(WHOLE_RUN),$(SLOW_FIRST) $(filter-out $(patsubst ./%,$(shell $(GO) list -m)/%,$(SLOW_FIRST)),$(shell $(GO) list ./...)),$(ROOT_PKGS))

# A planned failover and failback, and protecting a VM, with quorum-manager,
# pg-controller and the agents running as the service accounts and roles the
# charts install, not as cluster admin: the generated roles must grant all the
# controllers use.
CHART_RBAC_TESTS = ./test/e2e/failover:TestPlannedFailoverAndFailback ./test/e2e/protection:TestProtectionFlow
empty :=
space := $(empty) $(empty)
CHART_RBAC_SKIP = ^($(subst $(space),|,$(foreach t,$(CHART_RBAC_TESTS),$(lastword $(subst :, ,$(t))))))$$
CHART_RBAC_RUN = for t in $(CHART_RBAC_TESTS); do \
	SITERECOVERY_CHART_RBAC=1 KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -run "^$${t\#*:}\$$" $${t%%:*} || exit 1; done
test-chart-rbac: ## The flows of CHART_RBAC_TESTS under the charts' least-privilege roles (SITERECOVERY_CHART_RBAC=1).
	@$(CHART_RBAC_RUN)

clean: ## Remove bin/: the binaries, the images and the simulators.
	rm -rf $(BIN)

# The fault matrices, the benchmarks and the krew release, each in a file of its own.
include hack/make/faults.mk hack/make/bench.mk hack/make/krew.mk
