// Package freeze takes application-consistent replication points: it freezes
// the file systems of a group's running guests through KubeVirt's freeze
// subresource (carried out by the guest agent), lets the caller cut the point,
// and thaws them again, always: after the point, when cutting it failed, and
// when the caller's context ends. A planned failover asks instead to hold
// the freeze once its cut (the guests' stop) succeeded: the stop ends it, or
// KubeVirt at the bound.
//
// A guest that cannot be frozen (its guest agent does not answer, so KubeVirt
// refuses the call or does not answer in time) never blocks the point: the
// point is taken anyway and reported crash-consistent, naming that VM. Every
// freeze carries the group's bound as KubeVirt's unfreezeTimeout, so a guest
// is thawed by KubeVirt itself even if this process dies, and the point is cut
// under a deadline at that bound: a point cut later than that could straddle
// KubeVirt's own thaw and is reported crash-consistent.
package freeze
