// Package nodeagent is the drbd-node-agent: the per-node controller that turns the
// DRBDResources assigned to its node (spec.nodeName) into running DRBD 9 resources
// and reports what DRBD does back into their status.
//
// Three parts share one drbd.Tracker:
//
//   - Watcher runs `drbdsetup events2` (drbd.Streamer) as a manager Runnable and
//     folds its events into the Tracker. Every change wakes the reconciler (through a
//     source.Channel) and the taint controller, so nothing polls DRBD.
//   - Reconciler runs phases per resource (flow.RunPhases): finalizer, name claim,
//     configuration (spec -> drbd.ResourceConfig, backing device resolution, atomic
//     render), metadata creation (once, remembered by a marker file next to the
//     resource file), up/adjust, and role. Then setter functions compute the status
//     from the phase results and the tracked DRBD state, and a flow.StatusWriter
//     paced by a Coalescer bounds the status writes to one per resource per interval
//     (default one second) while never dropping the last change.
//   - Taints keeps the node's drbd.linbit.com/lost-quorum:NoSchedule taint in line
//     with the tracked quorum of every resource that is Primary on the node.
//
// Time-dependent decisions go through an injected clock (k8s.io/utils/clock).
package nodeagent
