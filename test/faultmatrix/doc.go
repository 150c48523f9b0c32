// Package faultmatrix is what every fault matrix of the integration tests
// shares: the seeded rotation that picks the cells a run covers (the
// -fault-matrix.* flags and the seed variable), and the safety recorder that
// watches both workload clusters for a VM running on two of them at once,
// through API server outages (RecordVMIs), or more simply for runs that keep
// their API servers up (WatchVMIs), or of any kind in a state that must hold
// on one cluster at a time (RecordPresence); the faults every flow shares
// (Fault: quorum-manager, pg-controller or agent killed, an API server
// stopped or slow, quorum-manager's clock jumped, the DRBD link cut), acting
// on a zone's env.Env and env.Processes; the data invariant (CheckData):
// every write a guest saw acknowledged reads back wherever its VM starts;
// and the Markdown table of a run's cells (Table). A zone is built with what
// its faults need: a latency proxy in front of each API server
// (env.Options.Latency) for a slow one, and quorum-manager on an
// env.SteppedClock for a clock jump.
//
// A matrix is flow × fault × the step the fault lands in; the cells, how a
// fault is injected and what a flow must end in stay with the flow's tests.
package faultmatrix
