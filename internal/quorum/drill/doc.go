// Package drill is the drill controller of quorum-manager: it runs a
// ProtectionGroup's scheduled drills (spec.drill). When the schedule (five
// cron fields, UTC) is due, it creates a TestFailover from spec.drill.template
// for the group; the test-failover controller runs it like any other. The
// drill controller only starts drills, reads how they ended, keeps the last
// spec.drill.keep finished ones and reports in status.drill.
//
// Rules:
//   - One drill per slot, named after the slot ("<group>-drill-<yyyymmddhhmm>"),
//     so a quorum-manager restarted between creating a TestFailover and
//     writing status.drill finds the one it created instead of creating a second.
//   - A slot missed while quorum-manager was down runs once, for the latest
//     missed slot, never once per slot.
//   - Never two at once: a slot that falls due while a TestFailover or a
//     FailoverRequest of the group is in progress, or while the group runs on
//     the template's targetCluster, is skipped, and status.drill.message and a
//     DrillSkipped event say why. The next slot is tried as usual.
//   - Retention deletes only finished TestFailovers that carry DrillLabel with
//     the group's name and are owned by the group: a TestFailover someone
//     created by hand is never deleted.
//   - nextScheduleTime is computed from the spec of generation
//     status.drill.observedGeneration; a spec change keeps a pending slot when
//     the new schedule still has it.
//   - The controller requeues the group at its next slot; a change of the
//     group's spec or annotations, or of one of its drills, wakes it earlier.
//     It never polls.
//
// Events on the group: DrillStarted, DrillPassed, DrillFailed, DrillSkipped,
// recorded once the status that shows them is written.
package drill
