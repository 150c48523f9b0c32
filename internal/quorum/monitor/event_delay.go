package monitor

import "time"

// remoteEventDelay is how long a remote event (a DRBDResource change, a
// cluster's reachability) waits before it wakes its group. A failover or a
// resync changes every replica of a group within moments, and each evaluation
// reads and aggregates the whole group: evaluated once per event, a group of
// n VMs costs n² reads. While the group waits in the queue, further events of
// it join the same evaluation, so a burst costs one evaluation per delay.
// Lag and RPO are reported in seconds; a second more is not seen
// (flow.DelayedSource).
const remoteEventDelay = time.Second
