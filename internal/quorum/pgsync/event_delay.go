package pgsync

import "time"

// remoteEventDelay is how long a remote event (a workload copy's status, a
// VM, a cluster's reachability) waits before it wakes its group. A failover
// changes every VM of a group within moments, and each pass reads every source
// and standby VM of the group: woken once per event, a group of n VMs costs n²
// reads. While the group waits in the queue, further events of it join the
// same pass, so a burst costs one pass per delay. Changes of the quorum group
// itself and of its zone are not delayed: they carry what the copies must say
// (flow.DelayedSource).
const remoteEventDelay = 500 * time.Millisecond
