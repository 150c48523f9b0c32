# Included by the Makefile: the failover tests of partial site failures and the
# fault matrices on real API servers. Each matrix runs a slice of its cells in
# `make test` (test-integration); these targets run them all.

.PHONY: fault-tests fault-matrix data-fault-matrix protection-fault-matrix testfailover-fault-matrix drpc-fault-matrix soak

FAULT_TESTS = TestAgentDownOnTargetIsNamed|TestFailbackAfterFencedFailover|TestFailbackAfterFencedOffRecordRemoved|TestSilentAgentWakesAtHeartbeatExpiry|TestLeaseTakeoverOnlyAfterExpiry|TestUnplannedFailoverWithPrimaryDown|TestSourceControlPlane|TestPlannedFailoverWithDataPathDown|TestDrainTimeoutFailsSafely|TestBatchBootTimeout|TestForceRemovesTaint|TestQuorumManagerRestartedInEachPhase
fault-tests: ## The failover's partial-failure tests on real API servers (part of test-integration too).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -run '$(FAULT_TESTS)' ./test/e2e/failover/

SEED ?= 0
fault-matrix: ## Every cell of the failover fault matrix on real API servers (SEED=<n> fixes the rotation; 0 is today's).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 120m -run '^TestFaultMatrix$$' ./test/e2e/failover/ -args -fault-matrix.all -fault-matrix.seed=$(SEED)

data-fault-matrix: ## Every cell of the data fault matrix: the guest's writes checked through planned failovers with faults (SEED=<n> fixes their order).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 30m -run '^TestDataFaultMatrix$$' ./test/e2e/protection/ -args -fault-matrix.all -fault-matrix.seed=$(SEED)

protection-fault-matrix: ## Every cell of the protect/unprotect fault matrix on real API servers (SEED=<n> fixes their order).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 90m -run '^TestProtectionFaultMatrix$$' ./test/e2e/protection/ -args -fault-matrix.all -fault-matrix.seed=$(SEED)

testfailover-fault-matrix: ## Every cell of the test failover fault matrix on real API servers (SEED=<n> fixes their order).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 60m -run '^TestTestFailoverFaultMatrix$$' ./test/e2e/testfailover/ -args -fault-matrix.all -fault-matrix.seed=$(SEED)

drpc-fault-matrix: ## Every cell of the DRPC Relocate/Failover fault matrix (Offloaded) on real API servers (SEED=<n> fixes their order).
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 60m -run '^TestDRPCFaultMatrix$$' ./test/e2e/drpc/ -args -fault-matrix.all -fault-matrix.seed=$(SEED)

FAILOVERS ?= 200
soak: ## FAILOVERS planned failovers back and forth, each with a random fault of the matrix (SEED=<n>); prints the figures.
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -v -timeout 12h -run '^TestFaultSoak$$' ./test/e2e/failover/ -args -fault-soak.failovers=$(FAILOVERS) -fault-soak.seed=$(or $(filter-out 0,$(SEED)),1) $(if $(BUDGET),-fault-soak.budget=$(BUDGET))
