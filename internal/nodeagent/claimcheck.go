package nodeagent

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// DefaultClaimRecheckInterval is how often the agent checks again that the
// claims of a configured replica are still its request's and still resolve
// to the devices DRBD was given.
const DefaultClaimRecheckInterval = 5 * time.Minute

// ReasonBackingClaimChanged is the Configured reason of a replica whose
// backing or metadata claim lost its request's labels, went, or now resolves
// to another device since the agent handed its device to DRBD.
const ReasonBackingClaimChanged = "BackingClaimChanged"

// A claim is checked (backingClaim) when its device is resolved; afterwards
// anyone who may edit PVCs in the namespace can strip its labels, or delete
// and recreate it on another volume. What a production replica does then:
//   - it keeps running on the device it was given. DRBD holds that device
//     open, and taking it away under a running VM (down, detach) would crash
//     the guest and lose the writes in flight: the claim's labels say nothing
//     about the bytes on that device, which are still the replica's;
//   - the agent stops trusting the claim for anything new: no re-resolution
//     of the device, no new resource file, no adjust and no up (after a node
//     restart) until the claim is its request's again and resolves to the same
//     device, or the protection is removed;
//   - Configured=False, reason BackingClaimChanged, names the claim and what
//     changed, so the operator relabels it (or the protection flow does, at
//     its periodic check, for source claims) or removes the protection.
//
// Role changes go on: they touch no device, and a failover must not wait on a
// label. The check reads each claim once per DefaultClaimRecheckInterval
// (Config.ClaimRecheckInterval) per replica, never on each reconcile.

// recheckClaims verifies a configured replica's claims when its check is due
// and records in the memo whether they are still trusted; it returns when to
// check next.
func (r *Reconciler) recheckClaims(ctx context.Context, s *scope) (time.Duration, error) {
	every := r.Config.ClaimRecheckInterval
	if every <= 0 {
		every = DefaultClaimRecheckInterval
	}
	now := r.Clock.Now()
	if wait := s.memo.claimsCheckedAt.Add(every).Sub(now); !s.memo.claimsCheckedAt.IsZero() && wait > 0 {
		return wait, nil
	}
	devices, meta, err := r.resolveDevices(ctx, s.obj)
	switch e := flow.As(err); {
	case err == nil:
		s.memo.untrusted = changedDevice(s.memo.devices, devices, "backing")
		if s.memo.untrusted == "" {
			s.memo.untrusted = changedDevice(s.memo.metaDevices, meta, "metadata")
		}
	case e != nil && (e.Reason == ReasonBackingDeviceRefused || e.Reason == srv1alpha1.ReasonBackingDeviceMissing):
		s.memo.untrusted = e.Error()
	default:
		return 0, err // a failed read says nothing; the next reconcile retries
	}
	s.memo.claimsCheckedAt = now
	if s.memo.untrusted != "" {
		// Checked again soon, so that a relabelled claim is trusted again.
		return deviceRetry, nil
	}
	return every, nil
}

// changedDevice describes the first volume whose claim now resolves to
// another device than the one DRBD was given.
func changedDevice(given, now map[int32]string, what string) string {
	for n, dev := range given {
		if now[n] != dev {
			return fmt.Sprintf("%s: %s PVC now resolves to %q, not to the device DRBD was given (%q)", volumeName(n), what, now[n], dev)
		}
	}
	return ""
}

// holdUntrusted keeps a replica whose claims are not trusted as it runs: the
// file last applied stays, nothing is adjusted, and a replica that is not up
// is not brought up.
func (r *Reconciler) holdUntrusted(s *scope, next time.Duration) (ctrl.Result, error) {
	msg := s.memo.untrusted + "; the replica keeps running on the device it was given, and the agent changes nothing on it " +
		"(no re-resolution, adjust or up) until the PVC carries its protection request's labels and resolves to that device again, or the protection is removed"
	if !s.up {
		return ctrl.Result{}, waitOn(srv1alpha1.ConditionConfigured, ReasonBackingClaimChanged, next, nil, msg)
	}
	s.devices, s.rendered, s.needsAdjust, s.untrusted = s.memo.devices, s.memo.applied, false, true
	setCondition(s, metav1.Condition{Type: srv1alpha1.ConditionConfigured, Status: metav1.ConditionFalse, Reason: ReasonBackingClaimChanged, Message: msg})
	return ctrl.Result{RequeueAfter: next}, nil
}
