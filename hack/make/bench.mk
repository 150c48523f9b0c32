# Included by the Makefile: the paired benchmarks and the scale curve on real
# API servers. None runs in `make test`; each prints one table of ratios.

.PHONY: bench bench-volsync bench-scale bench-tenants

# Paired benchmarks (test/benchpair): each product round runs turn by turn with
# a round of its write floor; test/benchtable prints one table of the ratios.
BENCH ?= ^Benchmark(Failover20VMs|ConsensusLatency|SteadyState)$$
BENCH_PKGS ?= ./test/e2e/failover ./test/e2e/drpc ./test/steadystate
BENCH_SCALE ?= ^Benchmark(Failover(100|200)VMs|Failover10Groups|ConsensusLatency200|Protect100VMs)$$
BENCH_SCALE_PKGS ?= ./test/e2e/failover ./test/e2e/drpc ./test/e2e/protection

bench: ## The paired benchmarks (about 20 minutes): product over floor per pair, in one table.
	$(GO) test -count=1 -run '^$$' $(BENCH_PKGS) >/dev/null
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -p 1 -count=1 -timeout 60m -run '^$$' -bench '$(BENCH)' -benchtime 1x $(BENCH_PKGS) | $(GO) run ./test/benchtable

bench-volsync: ## VolSync group cycles of 8 and 64 PVCs of 1 GiB: diff bytes over full, cycle time over its write floor.
	$(GO) test -count=1 -run '^$$' ./test/e2e/volsync >/dev/null
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -p 1 -count=1 -timeout 30m -run '^$$' -bench '^BenchmarkGroupCycle' -benchtime 1x ./test/e2e/volsync | $(GO) run ./test/benchtable

bench-scale: ## The scale curve: 100 and 200 VMs, 10 groups at once, 200 DRPCs, protecting 100 VMs (an hour or more).
	$(GO) test -count=1 -run '^$$' $(BENCH_SCALE_PKGS) >/dev/null
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -p 1 -count=1 -timeout 180m -run '^$$' -bench '$(BENCH_SCALE)' -benchtime 1x $(BENCH_SCALE_PKGS) | $(GO) run ./test/benchtable

bench-tenants: ## What a DR namespace costs (about 30 minutes): 100 VMs beside 10,000 unrelated PVCs and 2,000 VMs, and 1, 10 and 50 DR namespaces sharing a pair of clusters.
	$(GO) test -count=1 -run '^$$' ./test/steadystate >/dev/null
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -timeout 120m -run '^$$' -bench '^BenchmarkTenants$$' -benchtime 1x ./test/steadystate | $(GO) run ./test/benchtable
