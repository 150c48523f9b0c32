// Package testfailover is the test-failover-controller of quorum-manager. It
// executes a TestFailover: it boots copies of a ProtectionGroup's DR replicas in
// an isolated namespace on the DR cluster, checks them, records every verdict in
// status.results and deletes everything it made. Production is never touched:
// the controller only creates objects (labelled LabelUID) and only deletes what
// carries that label; it never writes a production VM, PVC, DRBDResource or
// ProtectionGroup, so DRBD keeps replicating throughout.
//
// Phases (each idempotent, so a restarted quorum-manager resumes where it was):
//
//	Pending       validate: the group exists, targetCluster is a zone cluster that
//	              is not the group's activeCluster, the isolated namespace
//	              (spec.isolatedNamespace or "sr-test-<name>") does not exist or is
//	              this test's, and no standby has hook sidecars the target
//	              does not let test copies run (hooks.go). Bad input ends in
//	              Failed with the reason on Ready=False; nothing is created.
//	              Then the finalizer is added.
//	Snapshotting  create the namespace and its NetworkPolicy (ingress and egress
//	              only within the namespace, plus DNS), then one VolumeSnapshot per
//	              disk of every group VM, next to the snapshotted PVC. Before
//	              that, every DR replica to snapshot must be UpToDate (below).
//	Restoring     carry each snapshot into the isolated namespace (a
//	              pre-provisioned VolumeSnapshotContent with the same snapshot
//	              handle, deletionPolicy Retain, and a VolumeSnapshot bound to it:
//	              a PVC can only be restored from a snapshot of its own namespace)
//	              and create a PVC from each copy.
//	Booting       start the test VMs under the group's boot plan (spec.boot of
//	              the quorum copy, run by internal/bootplan as pg-controller runs
//	              it): a stage's test VMs are created, running, once it may
//	              start; its gate reads their instances, and its steps and TCP/
//	              HTTP gates run as restricted Jobs in the isolated namespace.
//	              status.boot records each stage. Record VMReady per VM.
//	Verifying     GuestAgent (VMI condition AgentConnected) and Probe (a Job).
//	CleaningUp    delete everything by label; the namespace last.
//	Succeeded | Failed
//
// Which PVCs are snapshotted: the disks are read from each VM's Halted standby
// on the DR cluster (pg-sync keeps it in step with production); every volume that
// names a PVC or DataVolume counts. On the DRBD backend that claim is the
// frontend PVC "<pvc>-drbd", a local PV on /dev/drbd<minor> that no CSI driver
// can snapshot (and that is not even openable while the DR replica is
// Secondary), so the controller snapshots the DR backing PVC "<pvc>" instead:
// the CSI volume that DRBD replicates into on the DR side, with the same data.
// A claim that is not a DRBD frontend is snapshotted as is. Each snapshot is
// crash-consistent for its disk; disks of one VM are not snapshotted atomically.
//
// Only UpToDate DR replicas are snapshotted: before requesting the snapshot of a
// DRBD disk, the controller reads the VM's DR-side DRBDResource ("vm-<vm>") and
// the local disk state of the volume that stores the backing PVC. An
// Inconsistent replica (an initial sync or a resync under way) is not one image,
// and an Outdated or Consistent one is not what a planned failover would boot;
// the test then fails at once with ReasonReplicaNotUpToDate, naming the VM, the
// DRBDResource, the volume and its state (replicas.go says why it does not wait).
//
// Test VMs are copies of the standby specs with runStrategy Always, the restored
// PVCs as disks, a fresh firmware UUID, fresh random MAC addresses and only the
// pod network (masquerade); multus/bridge networks and multus annotations are
// dropped. Hook sidecars (hooks.kubevirt.io/hookSidecars) are kept where the
// target's workload release sets quorumAccess.testFailover.allowHookSidecars,
// and refuse the test otherwise.
//
// Boot plan: a plan entry "name" or "namespace/name" (the production
// namespace) names the test copy of that VM. The VMs no stage names start
// last, in the implicit stage, bounded by vmReadyTimeoutSeconds; without a
// plan that is every VM, at once. A stage that times out or whose step fails
// under onStageTimeout Stop leaves the later stages' VMs uncreated: their
// VMReady fails "not started: boot stage X did not succeed ...", so the
// verdict names the stage. A step runs without a service account token (the
// production namespace's account is not in the isolated namespace).
//
// Checks: VMReady within checks.vmReadyTimeoutSeconds of the VM's start. GuestAgent
// waits the same time from Verifying for the VMI condition AgentConnected=True
// and otherwise fails saying what it saw. Probe runs a busybox Job per VM
// (nc -z for TCP, wget for HTTP) against a headless Service selecting the VM's
// launcher pod; the verdict is the Job's Complete or Failed condition, and no
// verdict within the probe timeout plus a grace period fails the check.
//
// spec.timeoutSeconds bounds the test from its start; on expiry, as on deletion
// of the TestFailover (finalizer), the verdict is recorded on condition Verified
// and the test goes through CleaningUp. Ready copies Verified at the end;
// CleanedUp says whether anything is left.
//
// Only internal/quorum/remote reaches the DR cluster. Changes of the test's VMs and PVCs wake
// the test through its remote event source; snapshots, Jobs and VMIs are polled every
// few seconds while a test is active, so a cluster without the snapshot CRDs
// never blocks the shared remote caches. Events are recorded on phase
// transitions only. Metrics: siterecovery_test_failover_results_total and
// siterecovery_test_failover_duration_seconds, by protection_group and result.
package testfailover
