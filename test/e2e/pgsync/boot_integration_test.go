package pgsync_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// bootPlan is a two-stage plan: db first, gated on its port, then the web
// VMs by label, and what follows a stage that times out.
func bootPlan(dbTimeout int32, onTimeout srv1alpha1.StageTimeoutAction) *srv1alpha1.BootPlan {
	return &srv1alpha1.BootPlan{
		OnStageTimeout: onTimeout,
		Stages: []srv1alpha1.BootStage{
			{Name: "db", VirtualMachines: []string{"db"}, TimeoutSeconds: dbTimeout,
				Gate: srv1alpha1.BootGate{Type: srv1alpha1.GateTCP, Port: 5432}},
			{Name: "web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		},
	}
}

// copyBootIs checks that both workload copies carry the quorum copy's boot
// plan (nil: none), as the API server defaulted it.
func copyBootIs(t *testing.T, e *env.Env, what string) {
	t.Helper()
	ctx := context.Background()
	q := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, e.Client(env.Quorum).Get(ctx, groupKey, q))
	for _, cluster := range []string{env.Primary, env.DR} {
		env.Eventually(t, wait, cluster+" copy: "+what, func() error {
			cp := &srv1alpha1.ProtectionGroup{}
			if err := e.Client(cluster).Get(ctx, groupKey, cp); err != nil {
				return err
			}
			if !equality.Semantic.DeepEqual(cp.Spec.Boot, q.Spec.Boot) {
				return fmt.Errorf("boot %+v, want %+v", cp.Spec.Boot, q.Spec.Boot)
			}
			return nil
		})
	}
}

// checkBootPlanSync: a boot plan set on the quorum copy reaches both
// workload copies, a change follows, a hand edit of a copy is put back, and
// a removed plan is removed from the copies (their groups then start every
// VM at once again).
func checkBootPlanSync(t *testing.T, e *env.Env) {
	t.Helper()
	q, dr := e.Client(env.Quorum), e.Client(env.DR)
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) {
		g.Spec.Boot = bootPlan(120, srv1alpha1.StageTimeoutStop)
	})
	copyBootIs(t, e, "boot plan set")
	cp := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, dr.Get(context.Background(), groupKey, cp))
	require.Equal(t, int32(300), cp.Spec.Boot.Stages[1].TimeoutSeconds, "the copy carries the plan as the API server defaulted it")
	require.Equal(t, srv1alpha1.GateReady, cp.Spec.Boot.Stages[1].Gate.Type)

	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) {
		g.Spec.Boot = bootPlan(60, srv1alpha1.StageTimeoutContinue)
		g.Spec.Boot.Stages = append(g.Spec.Boot.Stages, srv1alpha1.BootStage{Name: "cache", VirtualMachines: []string{"cache"}})
	})
	copyBootIs(t, e, "boot plan changed")

	// Someone edits the DR copy's plan by hand: pg-sync owns it and puts the
	// quorum copy's back.
	patch(t, dr, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) {
		g.Spec.Boot.OnStageTimeout = srv1alpha1.StageTimeoutStop
	})
	copyBootIs(t, e, "hand edit reverted")

	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.Boot = nil })
	copyBootIs(t, e, "boot plan removed")
	env.Eventually(t, wait, "synced after the boot plan changes", synced(q, metav1.ConditionTrue, srv1alpha1.ReasonInSync, allInSync))
	// The copies keep what pg-sync does not own.
	require.NoError(t, copyIs(e.Client(env.Primary), srv1alpha1.StateRunning, "db", "web", "cache")())
	require.NoError(t, copyIs(dr, srv1alpha1.StateStopped, "db", "web", "cache")())
}
