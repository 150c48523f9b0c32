package rgs

import (
	"context"
	"fmt"
	"strings"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/workload/volsync"
)

// replicate points one ReplicationSource per PVC at the PVC's restored copy and
// triggers it with the cycle's name, then waits until every one reports it.
func (r *Reconciler) replicate(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.idle {
		return ctrl.Result{}, nil
	}
	addresses := map[string]string{}
	for _, d := range s.rgs.Spec.Destinations {
		addresses[d.PVCName] = d.Address
	}
	// No address is guessed: a source sends only where its destination said
	// it listens, relayed from the peer cluster into spec.destinations.
	var unknown []string
	for _, pvc := range sortedKeys(s.members) {
		if addresses[pvc] == "" {
			unknown = append(unknown, pvc)
		}
	}
	if len(unknown) > 0 {
		return ctrl.Result{}, flow.Waiting(ReasonNoDestinationAddress, poll,
			"no address yet for ReplicationDestination %s on the peer cluster: it has not published status.rsyncTLS.address, or it has not reached spec.destinations", strings.Join(unknown, ", "))
	}
	refs := make([]*corev1.ObjectReference, 0, len(s.members))
	var failing, pending []string
	for _, pvc := range sortedKeys(s.members) {
		rs, err := r.ensureSource(ctx, s, pvc, addresses[pvc])
		if err != nil {
			return ctrl.Result{}, flow.Transient("SourceUpdateFailed", fmt.Errorf("ReplicationSource %s: %w", pvc, err))
		}
		refs = append(refs, &corev1.ObjectReference{APIVersion: volsyncv1alpha1.GroupVersion.String(), Kind: "ReplicationSource", Namespace: rs.Namespace, Name: rs.Name})
		switch st := rs.Status; {
		case st != nil && st.LastManualSync == s.cycle():
			s.synced++
		case st != nil && failure(st) != "":
			failing = append(failing, fmt.Sprintf("PVC %s: %s", pvc, flow.Truncate(failure(st), 200)))
		default:
			pending = append(pending, pvc)
		}
	}
	s.rgs.Status.ReplicationSources = refs
	if len(failing) > 0 {
		return ctrl.Result{}, flow.Waiting(ReasonSourceFailing, poll, "ReplicationSource failing for %s", strings.Join(failing, "; "))
	}
	if len(pending) > 0 {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonSyncing, 0, "%d of %d PVCs synced, waiting for %s", s.synced, len(s.members), strings.Join(pending, ", "))
	}
	return ctrl.Result{}, nil
}

// failure says why a ReplicationSource's sync does not complete, empty while
// nothing failed. VolSync reports its own errors (a Secret it cannot read) as
// the Synchronizing condition's reason Error, and a failed mover (it cannot
// connect, the handshake fails) as the latest mover status with its log,
// while it runs the mover again: the sync stays in progress.
func failure(st *volsyncv1alpha1.ReplicationSourceStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, volsyncv1alpha1.ConditionSynchronizing); c != nil && c.Reason == volsyncv1alpha1.SynchronizingReasonError {
		return c.Message
	}
	if m := st.LatestMoverStatus; m != nil && m.Result == volsyncv1alpha1.MoverResultFailed {
		return "the mover failed: " + lastLine(m.Logs)
	}
	return ""
}

// lastLine is the last non-empty line of a mover's log, where it says why it
// stopped.
func lastLine(logs string) string {
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// ensureSource creates or updates the ReplicationSource of one PVC for this
// cycle, sending to address: RsyncTLS in full-sync mode, External with the
// base and target member snapshots in diff mode.
func (r *Reconciler) ensureSource(ctx context.Context, s *scope, pvc, address string) (*volsyncv1alpha1.ReplicationSource, error) {
	rs := &volsyncv1alpha1.ReplicationSource{ObjectMeta: metav1.ObjectMeta{Name: pvc, Namespace: s.rgs.Namespace}}
	restored := volsync.RestoredPVCName(pvc)
	secret := volsync.KeySecretName(s.rgs)
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, rs, func() error {
		if rs.Labels == nil {
			rs.Labels = map[string]string{}
		}
		rs.Labels[volsync.RGSLabel] = s.rgs.Name
		rs.Spec.SourcePVC = restored
		rs.Spec.Trigger = &volsyncv1alpha1.ReplicationSourceTriggerSpec{Manual: s.cycle()}
		if s.diff {
			rs.Spec.RsyncTLS = nil
			rs.Spec.External = &volsyncv1alpha1.ReplicationSourceExternalSpec{
				Provider: s.storageClass.Provisioner,
				Parameters: map[string]string{
					"copyMethod":         string(volsyncv1alpha1.CopyMethodDirect),
					"volumeName":         restored,
					"baseSnapshotName":   s.base[pvc],
					"targetSnapshotName": s.members[pvc],
					"address":            address,
					"keySecret":          secret,
				},
			}
		} else {
			rs.Spec.External = nil
			rs.Spec.RsyncTLS = &volsyncv1alpha1.ReplicationSourceRsyncTLSSpec{
				ReplicationSourceVolumeOptions: volsyncv1alpha1.ReplicationSourceVolumeOptions{
					CopyMethod: volsyncv1alpha1.CopyMethodDirect, StorageClassName: ptr.To(s.storageClass.Name),
				},
				KeySecret: ptr.To(secret),
				Address:   ptr.To(address),
			}
		}
		return controllerutil.SetControllerReference(s.rgs, rs, r.Client.Scheme())
	})
	return rs, err
}
