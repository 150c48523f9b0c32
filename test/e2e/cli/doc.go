// Package cli tests the kubectl siterecovery CLI end to end against a running
// product: every command and every runbook of scripts/ as an operator runs
// them, on one zone of test/drzone (quorum, primary and DR clusters on real
// kube-apiserver and etcd processes; quorum-manager, pg-controllers and DRBD
// agents in process; the KubeVirt, kubelet, DRBD, storage and snapshot
// simulators) with a protected group of running VMs.
//
// The subtests of TestCLI share that zone but not their effects: each starts
// from the healthy zone (the group running on the primary, replication healthy,
// no request in flight), uses names of its own, and puts back what it changed,
// so any one runs alone (go test -run 'TestCLI/<name>') and in any order
// (go test -shuffle=on shuffles them too). The CLI's own logic is tested in
// internal/cli, without controllers.
//
// The package holds only tests: it exports nothing, and product code never
// imports it.
package cli
