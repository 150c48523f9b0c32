package protection

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// defaultInitialSyncTimeout applies when spec.initialSyncTimeoutSeconds is unset.
const defaultInitialSyncTimeout = 24 * time.Hour

// diskUpToDate is DRBD's disk state of a complete replica.
const diskUpToDate = "UpToDate"

// waitInitialSync waits, driven by DRBDResource events, until every volume of the
// DR replica is UpToDate: the DR agent reports its local disk UpToDate, or the
// primary agent reports the peer disk UpToDate at 100.00%. It fails the request
// once spec.initialSyncTimeoutSeconds passed since the phase was entered.
func (r *Reconciler) waitInitialSync(ctx context.Context, s *scope) (ctrl.Result, error) {
	name := types.NamespacedName{Namespace: s.vmNamespace(), Name: s.req.Status.DRBDResourceName}
	prim, dr := &srv1alpha1.DRBDResource{}, &srv1alpha1.DRBDResource{}
	if err := s.primary.Direct.Get(ctx, name, prim); err != nil {
		return ctrl.Result{}, remoteErr(s.primaryCluster, "reading DRBDResource "+name.String(), err)
	}
	if err := s.dr.Direct.Get(ctx, name, dr); err != nil {
		return ctrl.Result{}, remoteErr(s.target, "reading DRBDResource "+name.String(), err)
	}
	done, progress := syncState(s.req.Status.Volumes, prim, dr)
	if done {
		if prim.Spec.ForcePromotion {
			// Later promotions of this replica must never be forced by accident.
			before := prim.DeepCopy()
			prim.Spec.ForcePromotion = false
			if err := s.primary.Direct.Patch(ctx, prim, client.MergeFrom(before)); err != nil {
				return ctrl.Result{}, remoteErr(s.primaryCluster, "clearing the initial forced promotion of "+name.String(), err)
			}
		}
		setCondition(s.req, ConditionInitialSyncComplete, metav1.ConditionTrue, srv1alpha1.ReasonInSync,
			"every volume of %s is UpToDate on %s", name.Name, s.target)
		return r.advance(ctx, s, srv1alpha1.ProtectionAddingToGroup)
	}
	timeout := defaultInitialSyncTimeout
	if t := s.req.Spec.InitialSyncTimeoutSeconds; t > 0 {
		timeout = time.Duration(t) * time.Second
	}
	left := s.trail.EnteredAt(srv1alpha1.ProtectionWaitingForInitialSync).Add(timeout).Sub(s.now)
	if left <= 0 {
		return ctrl.Result{}, flow.Stalled(ReasonInitialSyncTimeout, "initial sync of %s to %s did not finish within %s (%s); check the replication network between the clusters and create a new request",
			name.Name, s.target, timeout, progress)
	}
	reason, text := srv1alpha1.ReasonSyncing, fmt.Sprintf("initial sync to %s: %s", s.target, progress)
	if held := tlsHold(prim, dr); held != "" {
		reason, text = srv1alpha1.ReasonReplicationTLSUnsupported, held
	}
	setCondition(s.req, ConditionInitialSyncComplete, metav1.ConditionFalse, reason, "%s", text)
	s.trail.Wait(reason, "%s", text)
	s.requeue(left) // the timeout's only timer; progress arrives by watch
	return ctrl.Result{}, nil
}

// syncState reports whether every volume reached the DR replica and a short
// progress text ("volume 0 42.00%, volume 1 UpToDate").
func syncState(vols []srv1alpha1.ProtectedVolume, prim, dr *srv1alpha1.DRBDResource) (bool, string) {
	done := true
	progress := ""
	for _, v := range vols {
		state := "unknown"
		ok := false
		for _, lv := range dr.Status.Volumes {
			if lv.Number == v.Volume && lv.DiskState != "" {
				state, ok = lv.DiskState, lv.DiskState == diskUpToDate
			}
		}
		for _, p := range prim.Status.Peers {
			if p.NodeName != dr.Spec.NodeName {
				continue
			}
			for _, pv := range p.Volumes {
				if pv.Number != v.Volume {
					continue
				}
				if pv.PeerDiskState == diskUpToDate && pv.PercentInSync == "100.00" {
					ok = true
				} else if !ok && pv.PercentInSync != "" {
					state = pv.PercentInSync + "%"
				}
			}
		}
		if ok {
			state = diskUpToDate
		}
		done = done && ok
		if progress != "" {
			progress += ", "
		}
		progress += fmt.Sprintf("volume %d (%s) %s", v.Volume, v.Disk, state)
	}
	return done, progress
}
