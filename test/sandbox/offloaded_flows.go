package main

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// demoOffloaded runs, for the Offloaded group: the replication link down
// until the lag passes the objective (Degraded, an RPOEvent opens) and back
// (the event is Resolved), then a relocate to the DR cluster and a failover
// back, both through the DRPC.
func (sb *sandbox) demoOffloaded(ctx context.Context) error {
	say("%s: the array's replication link goes down; no cycle ends", ofGroup)
	sb.of.link.Pause()
	down := time.Now()
	st, err := sb.ofWaitStatus(ctx, func(st srv1alpha1.ReplicationGroupStatusStatus) bool {
		return st.Health == srv1alpha1.HealthDegraded && st.ActiveRPOEvent != ""
	})
	if err != nil {
		return fmt.Errorf("waiting for the RPOEvent with the link down: %w", err)
	}
	q := sb.zone.Clusters["quorum"].Client
	ev := &srv1alpha1.RPOEvent{}
	if err := q.Get(ctx, client.ObjectKey{Namespace: ofNamespace, Name: st.ActiveRPOEvent}, ev); err != nil {
		return err
	}
	say("%s: %s after %s down; RPOEvent %s opened: %s", ofGroup, st.Health, time.Since(down).Round(time.Second), ev.Name, ev.Status.Message)

	sb.of.link.Resume()
	back := time.Now()
	say("%s: the link is back", ofGroup)
	if err := poll(ctx, 3*time.Minute, func() (bool, error) {
		if err := q.Get(ctx, client.ObjectKeyFromObject(ev), ev); err != nil {
			return false, err
		}
		return ev.Status.State == srv1alpha1.RPOEventResolved, nil
	}); err != nil {
		return fmt.Errorf("waiting for RPOEvent %s to resolve: %w", ev.Name, err)
	}
	say("%s: RPOEvent %s Resolved %s after the link returned (peak lag %ds)", ofGroup, ev.Name, time.Since(back).Round(100*time.Millisecond), ev.Status.PeakLagSeconds)
	if err := sb.ofWaitHealth(ctx, srv1alpha1.HealthHealthy); err != nil {
		return err
	}

	start := time.Now()
	say("%s: relocating to %s through the DRPC", ofGroup, dr)
	if err := sb.patchDRPC(ctx, ofNamespace, ofGroup, func(d *drv1alpha1.DRPlacementControl) {
		d.Spec.Action, d.Spec.PreferredCluster = drv1alpha1.ActionRelocate, dr
	}); err != nil {
		return err
	}
	if err := sb.waitDRPCPhase(ctx, ofNamespace, ofGroup, drv1alpha1.DRStateRelocated, dr); err != nil {
		return err
	}
	say("%s: relocated to %s in %s", ofGroup, dr, time.Since(start).Round(100*time.Millisecond))

	start = time.Now()
	say("%s: failing over to %s through the DRPC", ofGroup, primary)
	if err := sb.patchDRPC(ctx, ofNamespace, ofGroup, func(d *drv1alpha1.DRPlacementControl) {
		d.Spec.Action, d.Spec.FailoverCluster = drv1alpha1.ActionFailover, primary
		// A Failover may lose writes: the protectionzone chart's admission
		// policy wants the group's name typed in the same write.
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[srv1alpha1.ConfirmAnnotation] = d.Spec.ProtectionGroupRef.Name
	}); err != nil {
		return err
	}
	if err := sb.waitDRPCPhase(ctx, ofNamespace, ofGroup, drv1alpha1.DRStateFailedOver, primary); err != nil {
		return err
	}
	say("%s: failed over to %s in %s", ofGroup, primary, time.Since(start).Round(100*time.Millisecond))
	say("Offloaded demo complete")
	return nil
}

// ofWaitHealth waits until the group's ReplicationGroupStatus has health h.
func (sb *sandbox) ofWaitHealth(ctx context.Context, h srv1alpha1.ReplicationHealth) error {
	st, err := sb.ofWaitStatus(ctx, func(st srv1alpha1.ReplicationGroupStatusStatus) bool { return st.Health == h })
	if err != nil {
		return fmt.Errorf("waiting for %s to be %s: %w", ofGroup, h, err)
	}
	say("%s: replication %s, lag %ds", ofGroup, st.Health, st.MaxLagSeconds)
	return nil
}

// ofWaitStatus waits until the group's ReplicationGroupStatus satisfies ok.
func (sb *sandbox) ofWaitStatus(ctx context.Context, ok func(srv1alpha1.ReplicationGroupStatusStatus) bool) (srv1alpha1.ReplicationGroupStatusStatus, error) {
	st := &srv1alpha1.ReplicationGroupStatus{}
	err := poll(ctx, 3*time.Minute, func() (bool, error) {
		err := sb.zone.Clusters["quorum"].Client.Get(ctx, client.ObjectKey{Namespace: ofNamespace, Name: ofGroup}, st)
		return err == nil && ok(st.Status), client.IgnoreNotFound(err)
	})
	if err != nil {
		return st.Status, fmt.Errorf("%w (last status: health %s, lag %ds, event %q)", err, st.Status.Health, st.Status.MaxLagSeconds, st.Status.ActiveRPOEvent)
	}
	return st.Status, nil
}
