// Package drbd talks to DRBD 9 through drbd-utils: it renders resource
// files, runs drbdadm/drbdsetup, parses `drbdsetup events2` and
// `drbdsetup status --json` output, and folds both into one per-resource
// state model that the status writer consumes.
//
// Nothing here needs the kernel module at compile or test time; the
// commands are reached through the Executor interface so tests can swap
// in the simulator under test/sim/drbd.
package drbd
