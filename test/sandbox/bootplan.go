package main

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// setBootPlan gives the demo group the worked example's two tiers: vm-1 is
// the database, which must be Ready before the others, the web tier, start.
// The sandbox's VMs are simulated and serve no port, so the database's gate
// is its VMI's Ready condition here; on real clusters it would be
// {type: TCP, port: 5432} (docs/recovery-plans.md).
func (sb *sandbox) setBootPlan(ctx context.Context) error {
	var web []string
	for i := 2; i <= sb.o.vms; i++ {
		web = append(web, fmt.Sprintf("vm-%d", i))
	}
	stages := []srv1alpha1.BootStage{{Name: "database", VirtualMachines: []string{"vm-1"}, TimeoutSeconds: 120,
		Gate: srv1alpha1.BootGate{Type: srv1alpha1.GateReady}}}
	if len(web) > 0 {
		stages = append(stages, srv1alpha1.BootStage{Name: "web", VirtualMachines: web, TimeoutSeconds: 120})
	}
	q := sb.zone.Clusters["quorum"].Client
	pg := &srv1alpha1.ProtectionGroup{}
	if err := q.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: groupName}, pg); err != nil {
		return err
	}
	before := pg.DeepCopy()
	pg.Spec.Boot = &srv1alpha1.BootPlan{OnStageTimeout: srv1alpha1.StageTimeoutStop, Stages: stages}
	if err := q.Patch(ctx, pg, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("setting the boot plan of %s: %w", groupName, err)
	}
	say("boot plan of %s: stage database (vm-1, gated on Ready), then stage web (%v)", groupName, web)
	return nil
}

// printBootStages prints how the request's boot plan ran on the target,
// stage by stage: what each started, when, and how long it took.
func printBootStages(fr *srv1alpha1.FailoverRequest) {
	b := fr.Status.Boot
	if b == nil {
		return
	}
	fmt.Printf("  boot stages on %s\n", fr.Spec.TargetCluster)
	for _, st := range b.Stages {
		took := ""
		if st.StartTime != nil && st.CompletionTime != nil {
			took = st.CompletionTime.Sub(st.StartTime.Time).Round(time.Millisecond).String()
		}
		start := ""
		if st.StartTime != nil {
			start = st.StartTime.Format("15:04:05")
		}
		fmt.Printf("  %8s  %-10s %-10s %8s  %v  %s\n", start, st.Name, st.Phase, took, st.VirtualMachines, st.Message)
	}
	for _, pt := range fr.Status.PhaseTimings {
		for _, st := range pt.Stages {
			fmt.Printf("  phaseTimings %s: stage %s %dms (%s)\n", pt.Phase, st.Stage, st.Milliseconds, st.Phase)
		}
	}
}
