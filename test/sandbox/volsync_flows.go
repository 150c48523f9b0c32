package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/sim/mover"
)

// vsCycles is how many scheduled diff cycles the demo shows after the first,
// full, one; each waits for the 1m schedule.
const vsCycles = 1

// demoVolSync runs, for the VolSync group: scheduled cycles after writes of
// 1 % of the disk (diff syncs), a relocate to the DR cluster with its final
// sync, and an unplanned failover back while the link is down, printing the
// data-loss window the request names.
func (sb *sandbox) demoVolSync(ctx context.Context) error {
	for i := range vsCycles {
		vol, err := sb.vsVolume(ctx, primary)
		if err != nil {
			return err
		}
		n := sb.vs.data.Change(vol, 0.01, uint64(10+i))
		before := len(sb.vs.mover.Transfers(vsAppNS, vsPVCName()))
		say("%s: the VM writes %d blocks (%s) on %s; waiting for the next scheduled cycle", vsGroup, n, size(int64(n)*vsBlockSize), primary)
		if err := poll(ctx, 3*time.Minute, func() (bool, error) {
			return len(sb.vs.mover.Transfers(vsAppNS, vsPVCName())) > before, nil
		}); err != nil {
			return fmt.Errorf("waiting for cycle %d: %w", i+2, err)
		}
	}
	if err := sb.vsEqual(ctx, primary, dr); err != nil {
		return err
	}

	// Relocate: a final sync before the switch, so nothing is lost.
	vol, err := sb.vsVolume(ctx, primary)
	if err != nil {
		return err
	}
	n := sb.vs.data.Change(vol, 0.01, 20)
	say("%s: the VM writes %d blocks; relocating to %s (planned: final sync first)", vsGroup, n, dr)
	seen, stop := sb.vsRecordProgressions(ctx)
	start := time.Now()
	if err := sb.vsPatchDRPC(ctx, func(d *drv1alpha1.DRPlacementControl) {
		d.Spec.Action, d.Spec.PreferredCluster = drv1alpha1.ActionRelocate, dr
	}); err != nil {
		return err
	}
	err = sb.vsWaitPhase(ctx, drv1alpha1.DRStateRelocated, dr)
	stop()
	if err != nil {
		return err
	}
	say("%s: relocated to %s in %s; progressions %v", vsGroup, dr, time.Since(start).Round(100*time.Millisecond), seen())
	if !slices.Contains(seen(), drv1alpha1.ProgressionRunningFinalSync) {
		return fmt.Errorf("the relocate showed no %s", drv1alpha1.ProgressionRunningFinalSync)
	}
	if err := sb.vsEqual(ctx, primary, dr); err != nil {
		return err
	}
	say("%s: no data lost: %s holds exactly what %s held", vsGroup, dr, primary)
	if err := sb.vsWaitProtected(ctx, dr, nil); err != nil {
		return err
	}

	// Unplanned failover back to the primary site while the link is down:
	// the writes after the last complete sync are lost, and the request says
	// since when.
	say("%s: the replication link fails; the VM on %s writes on", vsGroup, dr)
	sb.vs.mover.SetFault(vsAppNS, vsPVCName(), &mover.Fault{Fail: "link down"})
	if err := sb.vsWaitNoCycle(ctx, dr); err != nil {
		return err
	}
	img, err := sb.vsVolume(ctx, primary)
	if err != nil {
		return err
	}
	lastImage := sb.vs.data.Checksum(img)
	if vol, err = sb.vsVolume(ctx, dr); err != nil {
		return err
	}
	n = sb.vs.data.Change(vol, 0.05, 30)
	say("%s: %d blocks written on %s after the last complete sync; they will be lost", vsGroup, n, dr)
	// The failover completes with the link still down: the new primary's
	// PVCs are ready, only its protection fails.
	fr, err := sb.vsFailover(ctx, "vs-disaster-to-primary", primary)
	if err != nil {
		return err
	}
	if err := sb.vsWaitSyncFailing(ctx, primary); err != nil {
		return err
	}
	// No sync of the disk completes while the link is down.
	before := len(sb.vs.mover.Transfers(vsAppNS, vsPVCName()))
	sb.vs.mover.SetFault(vsAppNS, vsPVCName(), nil)
	say("%s: replication link restored; the mover retries", vsGroup)
	if c := meta.FindStatusCondition(fr.Status.Conditions, srv1alpha1.ConditionDataLossRisk); c != nil {
		say("%s: data-loss window (%s, %s): %s", vsGroup, c.Type, c.Reason, c.Message)
	} else {
		return fmt.Errorf("%s has no %s condition", fr.Name, srv1alpha1.ConditionDataLossRisk)
	}
	if err := sb.vsWaitPhase(ctx, drv1alpha1.DRStateFailedOver, primary); err != nil {
		return err
	}
	if vol, err = sb.vsVolume(ctx, primary); err != nil {
		return err
	}
	if got := sb.vs.data.Checksum(vol); got != lastImage {
		return fmt.Errorf("%s holds %s, not the last complete image %s", primary, got, lastImage)
	}
	say("%s: %s holds the last complete image (checksum %s); the later writes are absent", vsGroup, primary, short(lastImage))
	if err := poll(ctx, 3*time.Minute, func() (bool, error) {
		return len(sb.vs.mover.Transfers(vsAppNS, vsPVCName())) > before, nil
	}); err != nil {
		return fmt.Errorf("waiting for the first sync after the failover: %w", err)
	}
	if first := sb.vs.mover.Transfers(vsAppNS, vsPVCName())[before]; first.Cluster != primary || !first.Full {
		return fmt.Errorf("the first sync after the failover: %+v, want a full sync from %s", first, primary)
	}
	say("%s: the first sync from %s was a full one", vsGroup, primary)
	say("VolSync demo complete")
	return nil
}

// printTransfers prints every sync the mover completes for the group's disk
// (and the failover's rollback of it), as it completes.
func (sb *sandbox) printTransfers(ctx context.Context) {
	seen := map[string]int{}
	for ctx.Err() == nil {
		for _, name := range []string{vsPVCName(), "rb-" + vsPVCName()} {
			all := sb.vs.mover.Transfers(vsAppNS, name)
			for _, tr := range all[seen[name]:] {
				kind := "diff"
				if tr.Full {
					kind = "full"
				}
				what := "sync"
				if name != vsPVCName() {
					what = "rollback"
				}
				say("%s: %s from %-7s %s, %9s moved (%s)", vsGroup, what, tr.Cluster, kind, size(tr.Bytes), tr.Manual)
			}
			seen[name] = len(all)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func size(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%d MiB", b>>20)
	default:
		return fmt.Sprintf("%d B", b)
	}
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// vsVolume is the data handle (PV name) of the group's disk on cluster, once
// bound.
func (sb *sandbox) vsVolume(ctx context.Context, cluster string) (string, error) {
	c := sb.zone.Clusters[cluster].Client
	var name string
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		p := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: vsAppNS, Name: vsPVCName()}, p); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		name = p.Spec.VolumeName
		return p.Status.Phase == corev1.ClaimBound && name != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("%s bound on %s: %w", vsPVCName(), cluster, err)
	}
	return name, nil
}

// vsEqual waits until the disk on to holds what the disk on from holds.
func (sb *sandbox) vsEqual(ctx context.Context, from, to string) error {
	var want, got string
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		a, err := sb.vsVolume(ctx, from)
		if err != nil {
			return false, err
		}
		b, err := sb.vsVolume(ctx, to)
		if err != nil {
			return false, err
		}
		want, got = sb.vs.data.Checksum(a), sb.vs.data.Checksum(b)
		return want == got, nil
	})
	if err != nil {
		return fmt.Errorf("%s holds %s, %s holds %s: %w", from, want, to, got, err)
	}
	return nil
}

func (sb *sandbox) vsDRPC(ctx context.Context) (*drv1alpha1.DRPlacementControl, error) {
	return sb.getDRPC(ctx, vsNamespace, vsGroup)
}

func (sb *sandbox) vsPatchDRPC(ctx context.Context, mutate func(*drv1alpha1.DRPlacementControl)) error {
	return sb.patchDRPC(ctx, vsNamespace, vsGroup, mutate)
}

// vsWaitProtected waits until the DRPC, placed on cluster, is Protected
// with a lastGroupSyncTime after since.
func (sb *sandbox) vsWaitProtected(ctx context.Context, cluster string, since *metav1.Time) error {
	var why string
	err := poll(ctx, 5*time.Minute, func() (bool, error) {
		d, err := sb.vsDRPC(ctx)
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(d.Status.Conditions, drv1alpha1.ConditionProtected)
		last := d.Status.LastGroupSyncTime
		switch {
		case d.Status.PreferredDecision.ClusterName != cluster:
			why = fmt.Sprintf("placed on %q", d.Status.PreferredDecision.ClusterName)
		case c == nil || c.Status != metav1.ConditionTrue:
			why = fmt.Sprintf("Protected %+v", c)
		case last == nil || (since != nil && !last.After(since.Time)):
			why = fmt.Sprintf("lastGroupSyncTime %v", last)
		default:
			say("%s: Protected on %s, lastGroupSyncTime %s", vsGroup, cluster, last.Format("15:04:05"))
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s protected on %s (%s): %w", vsGroup, cluster, why, err)
	}
	return nil
}

func (sb *sandbox) vsWaitPhase(ctx context.Context, phase drv1alpha1.DRState, cluster string) error {
	return sb.waitDRPCPhase(ctx, vsNamespace, vsGroup, phase, cluster)
}

// vsWaitNoCycle waits until the group's source on cluster moves no data:
// idle or failing.
func (sb *sandbox) vsWaitNoCycle(ctx context.Context, cluster string) error {
	return poll(ctx, 3*time.Minute, func() (bool, error) {
		list := &drv1alpha1.ReplicationGroupSourceList{}
		if err := sb.zone.Clusters[cluster].Client.List(ctx, list, client.InNamespace(vsAppNS)); err != nil {
			return false, err
		}
		for _, g := range list.Items {
			c := meta.FindStatusCondition(g.Status.Conditions, "Ready")
			if g.Status.CurrentVolumeGroupSnapshot != "" && (c == nil || c.Reason != "SourceFailing") {
				return false, nil
			}
		}
		return true, nil
	})
}

// vsWaitSyncFailing waits until the VRG on cluster, primary with its PVCs
// ready, reports in DataProtected that its syncs fail, and prints why.
func (sb *sandbox) vsWaitSyncFailing(ctx context.Context, cluster string) error {
	var why string
	err := poll(ctx, 3*time.Minute, func() (bool, error) {
		v := &drv1alpha1.VolumeReplicationGroup{}
		if err := sb.zone.Clusters[cluster].Client.Get(ctx, client.ObjectKey{Namespace: vsAppNS, Name: vsGroup}, v); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		ready := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataReady)
		protected := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionDataProtected)
		why = fmt.Sprintf("DataReady %+v, DataProtected %+v", ready, protected)
		if ready == nil || ready.Status != metav1.ConditionTrue || protected == nil || protected.Reason != drv1alpha1.ReasonError {
			return false, nil
		}
		say("%s: VRG on %s is primary and DataReady, DataProtected=False: %s", vsGroup, cluster, protected.Message)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s: the failing sync on %s (%s): %w", vsGroup, cluster, why, err)
	}
	return nil
}

// vsRecordProgressions polls the DRPC's progression until stopped and
// returns what it saw so far.
func (sb *sandbox) vsRecordProgressions(ctx context.Context) (seen func() []drv1alpha1.ProgressionStatus, stop func()) {
	done := make(chan struct{})
	ch := make(chan []drv1alpha1.ProgressionStatus, 1)
	ch <- nil
	go func() {
		finalSynced := false
		for {
			if d, err := sb.vsDRPC(ctx); err == nil {
				s := <-ch
				if p := d.Status.Progression; p != "" && !slices.Contains(s, p) {
					s = append(s, p)
				}
				ch <- s
			}
			// The old primary's VRG says when its final sync completed.
			v := &drv1alpha1.VolumeReplicationGroup{}
			if err := sb.zone.Clusters[primary].Client.Get(ctx, client.ObjectKey{Namespace: vsAppNS, Name: vsGroup}, v); err == nil && !finalSynced {
				if c := meta.FindStatusCondition(v.Status.Conditions, drv1alpha1.ConditionFinalSynced); c != nil && c.Status == metav1.ConditionTrue {
					finalSynced = true
					say("%s: VRG on %s %s: %s", vsGroup, primary, c.Type, c.Message)
				}
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() []drv1alpha1.ProgressionStatus {
		s := <-ch
		ch <- s
		return s
	}, func() { close(done) }
}

// vsFailover runs one unplanned FailoverRequest of the VolSync group,
// confirmed with the group's name, and prints its timeline.
func (sb *sandbox) vsFailover(ctx context.Context, name, target string) (*srv1alpha1.FailoverRequest, error) {
	q := sb.zone.Clusters["quorum"].Client
	fr := &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: vsNamespace, Name: name,
			Annotations: map[string]string{srv1alpha1.ConfirmAnnotation: vsGroup}},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: vsGroup, Namespace: vsNamespace},
			TargetCluster: target, FailoverType: srv1alpha1.FailoverUnplanned, DrainTimeoutSeconds: 120, BatchBootTimeoutSeconds: 300},
	}
	created := time.Now()
	if err := q.Create(ctx, fr); err != nil {
		return nil, err
	}
	say("FailoverRequest %s/%s: unplanned failover of %s to %s (confirmed)", vsNamespace, name, vsGroup, target)
	if err := poll(ctx, 5*time.Minute, func() (bool, error) {
		if err := q.Get(ctx, client.ObjectKeyFromObject(fr), fr); err != nil {
			return false, err
		}
		return fr.Status.CompletionTime != nil, nil
	}); err != nil {
		return nil, err
	}
	printTimeline(created, fr)
	if fr.Status.Phase != srv1alpha1.FailoverCompleted {
		return nil, fmt.Errorf("%s ended %s: %s", name, fr.Status.Phase, fr.Status.Message)
	}
	return fr, nil
}
