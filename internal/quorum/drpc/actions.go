package drpc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// failover moves the application from src to tgt without needing src:
// the target's VRG becomes primary, then the application starts there. A
// reachable source is asked to stop the application first, and the target
// waits until it has, so that no VM runs on both clusters; its VRG becomes secondary in the steady state that follows,
// only once the application stopped there.
func (r *Reconciler) failover(ctx context.Context, s *scope, src, tgt string) (ctrl.Result, error) {
	s.setProgression(drv1alpha1.ProgressionFailingOverToCluster)
	if _, down := s.unreachable[src]; !down {
		// The source answers: its VMs may run, so the target starts nothing
		// until they stopped.
		stopped, err := r.ensureDesiredState(ctx, s, src, srv1alpha1.StateStopped)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !stopped {
			s.waitFor("the application to stop on %s before it starts on %s (%s)", src, tgt, appState(s.copies[src]))
			return flow.After(waitRetry), nil
		}
		running, err := r.runningVMI(ctx, s, src)
		if err != nil {
			return ctrl.Result{}, err
		}
		if running != "" {
			s.waitFor("VirtualMachineInstance %s on %s to be gone before the application starts on %s", running, src, tgt)
			return flow.After(waitRetry), nil
		}
	}
	if err := r.ensureVRG(ctx, s, tgt, drv1alpha1.Primary); err != nil {
		return ctrl.Result{}, err
	}
	if !vrgReached(s.vrgs[tgt], drv1alpha1.PrimaryState) {
		s.waitFor("the VRG on %s to become primary (%s)", tgt, vrgState(s.vrgs[tgt]))
		return flow.After(waitRetry), nil
	}
	return r.start(ctx, s, tgt, drv1alpha1.DRStateFailedOver)
}

// relocate moves the application from src to tgt with both reachable:
// the application stops on src, both VRGs become secondary, then the target's
// VRG becomes primary and the application starts there.
func (r *Reconciler) relocate(ctx context.Context, s *scope, src, tgt string) (ctrl.Result, error) {
	p := s.drpc.Status.Progression
	if p != drv1alpha1.ProgressionWaitForReadiness && p != drv1alpha1.ProgressionUpdatedPlacement {
		for _, c := range []string{src, tgt} {
			if err, down := s.unreachable[c]; down {
				return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "relocate needs both clusters: %w", err)
			}
		}
		s.setProgression(drv1alpha1.ProgressionPreparingFinalSync)
		stopped, err := r.ensureDesiredState(ctx, s, src, srv1alpha1.StateStopped)
		if err != nil || !stopped {
			s.waitFor("the application to stop on %s (%s)", src, appState(s.copies[src]))
			return flow.After(waitRetry), err
		}
		if synced, err := r.runFinalSync(ctx, s, src); err != nil || !synced {
			return flow.After(waitRetry), err
		}
		s.setProgression(drv1alpha1.ProgressionEnsuringVolumesAreSecondary)
		srcDone, err := r.ensureSecondary(ctx, s, src)
		if err != nil {
			return ctrl.Result{}, err
		}
		tgtDone, err := r.ensureSecondary(ctx, s, tgt)
		if err != nil {
			return ctrl.Result{}, err
		}
		promoting, err := r.groupPromoting(ctx, s, tgt)
		if err != nil {
			return ctrl.Result{}, err
		}
		if promoting {
			// A peer passed the barrier below: the VRGs on the target then report
			// no state until every peer asks for primary, this one included.
			tgtDone = true
		}
		if !srcDone || !tgtDone {
			s.waitFor("secondary VRGs on both clusters (%s: %s; %s: %s)", src, vrgState(s.vrgs[src]), tgt, vrgState(s.vrgs[tgt]))
			return flow.After(waitRetry), nil
		}
		if pending, err := r.peersNotSecondary(ctx, s, src, tgt, promoting); err != nil || len(pending) > 0 {
			s.waitFor("the other VRGs of global group %s to be secondary on both clusters first: %s", s.globalVGR(), strings.Join(pending, ", "))
			return flow.After(waitRetry), err
		}
	}
	s.setProgression(drv1alpha1.ProgressionWaitForReadiness)
	if err := r.ensureVRG(ctx, s, tgt, drv1alpha1.Primary); err != nil {
		return ctrl.Result{}, err
	}
	if !vrgReached(s.vrgs[tgt], drv1alpha1.PrimaryState) {
		s.waitFor("the VRG on %s to become primary (%s)", tgt, vrgState(s.vrgs[tgt]))
		return flow.After(waitRetry), nil
	}
	return r.start(ctx, s, tgt, drv1alpha1.DRStateRelocated)
}

// start runs the application on the new primary and completes the action once
// it runs.
func (r *Reconciler) start(ctx context.Context, s *scope, tgt string, phase drv1alpha1.DRState) (ctrl.Result, error) {
	s.setProgression(drv1alpha1.ProgressionUpdatedPlacement)
	running, err := r.ensureDesiredState(ctx, s, tgt, srv1alpha1.StateRunning)
	if err != nil || !running {
		s.waitFor("the application to run on %s (%s)", tgt, appState(s.copies[tgt]))
		return flow.After(waitRetry), err
	}
	return ctrl.Result{}, r.complete(ctx, s, tgt, phase)
}

func nowTime(s *scope) *metav1.Time { return &metav1.Time{Time: s.now} }

func durationSince(s *scope, t *metav1.Time) *metav1.Duration {
	return &metav1.Duration{Duration: s.now.Sub(t.Time).Round(time.Millisecond)}
}

// peersNotSecondary is the barrier of a global group's Relocate: every VRG
// of the group on both clusters is secondary before the target is promoted. The VRGs of a group on one cluster reach a state only together
// (GlobalState consensus), so a peer that promoted its target VRG while another
// peer's was still turning secondary would leave both waiting for each other.
// It lists the group's other VRGs that are not secondary yet. Once a peer has
// asked for its VRG on the target to be primary (promoting), the group has
// passed the barrier on the target: that peer saw every VRG secondary, and the
// other VRGs there now report no state until they are asked for primary too
// (the GlobalState consensus), so waiting for them would deadlock the group.
func (r *Reconciler) peersNotSecondary(ctx context.Context, s *scope, src, tgt string, promoting bool) ([]string, error) {
	label := s.globalVGR()
	if label == "" {
		return nil, nil
	}
	clusters := []string{src, tgt}
	if promoting {
		clusters = clusters[:1]
	}
	var pending []string
	for _, c := range clusters {
		list, err := r.groupVRGs(ctx, s, c)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			v := &list.Items[i]
			own := v.Namespace == s.vrgNamespace && v.Name == s.drpc.Name
			if !own && !vrgReached(v, drv1alpha1.SecondaryState) {
				pending = append(pending, fmt.Sprintf("%s/%s on %s", v.Namespace, v.Name, c))
			}
		}
	}
	slices.Sort(pending)
	return pending, nil
}

// groupPromoting reports whether a VRG of the DRPC's global group on tgt is
// already asked to be primary: a peer has passed the relocate barrier.
func (r *Reconciler) groupPromoting(ctx context.Context, s *scope, tgt string) (bool, error) {
	if s.globalVGR() == "" {
		return false, nil
	}
	list, err := r.groupVRGs(ctx, s, tgt)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list.Items, func(v drv1alpha1.VolumeReplicationGroup) bool {
		return v.Spec.ReplicationState == drv1alpha1.Primary
	}), nil
}

// groupVRGs lists the VRGs of the DRPC's global group on a cluster.
func (r *Reconciler) groupVRGs(ctx context.Context, s *scope, cluster string) (*drv1alpha1.VolumeReplicationGroupList, error) {
	label := s.globalVGR()
	list := &drv1alpha1.VolumeReplicationGroupList{}
	if err := s.remotes[cluster].Cached.List(ctx, list, client.MatchingLabels{drv1alpha1.GlobalVGRLabel: label}); err != nil {
		return nil, flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("cluster %s: listing the VRGs of %s: %w", cluster, label, err))
	}
	return list, nil
}
