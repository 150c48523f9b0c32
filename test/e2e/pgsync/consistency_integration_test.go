package pgsync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// copyConsistencyIs checks that both workload copies carry want as
// spec.consistency (nil: none).
func copyConsistencyIs(t *testing.T, e *env.Env, what string, want *srv1alpha1.ConsistencySpec) {
	t.Helper()
	for _, cluster := range []string{env.Primary, env.DR} {
		env.Eventually(t, wait, cluster+" copy: "+what, func() error {
			cp := &srv1alpha1.ProtectionGroup{}
			if err := e.Client(cluster).Get(context.Background(), groupKey, cp); err != nil {
				return err
			}
			if !equality.Semantic.DeepEqual(cp.Spec.Consistency, want) {
				return fmt.Errorf("consistency %+v, want %+v", cp.Spec.Consistency, want)
			}
			return nil
		})
	}
}

// recordCopyPoint patches a point into a workload copy's status, as its
// pg-controller records a VolSync cycle's point.
func recordCopyPoint(t *testing.T, c client.Client, p srv1alpha1.ConsistencyPoint) {
	t.Helper()
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, c.Get(context.Background(), groupKey, g))
	before := g.DeepCopy()
	g.Status.Consistency = &srv1alpha1.ConsistencyStatus{LastPoint: &p}
	require.NoError(t, c.Status().Patch(context.Background(), g, client.MergeFrom(before)))
}

// checkConsistencySync: spec.consistency reaches both workload copies (the
// primary's VolSync cycles read it there) and leaves them when removed; the
// newest point a copy records becomes the quorum copy's lastPoint, and an
// older one does not replace it.
func checkConsistencySync(t *testing.T, e *env.Env) {
	t.Helper()
	q := e.Client(env.Quorum)
	spec := &srv1alpha1.ConsistencySpec{Mode: srv1alpha1.ConsistencyApplication, FreezeTimeoutSeconds: 5}
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.Consistency = spec })
	copyConsistencyIs(t, e, "consistency set", spec)

	now := metav1.NewTime(time.Now().Truncate(time.Second))
	point := srv1alpha1.ConsistencyPoint{Time: now, Source: "VolSyncCycle", Consistency: srv1alpha1.ConsistencyCrash,
		CrashConsistentVMs: []string{env.Namespace + "/web"}, Message: env.Namespace + "/web not frozen: Guest agent is not responding"}
	recordCopyPoint(t, e.Client(env.Primary), point)
	lastPointIs := func(what string) {
		env.Eventually(t, wait, what, func() error {
			g := &srv1alpha1.ProtectionGroup{}
			if err := q.Get(context.Background(), groupKey, g); err != nil {
				return err
			}
			if g.Status.Consistency == nil || !equality.Semantic.DeepEqual(g.Status.Consistency.LastPoint, &point) {
				return fmt.Errorf("lastPoint %+v, want %+v", g.Status.Consistency, point)
			}
			return nil
		})
	}
	lastPointIs("the primary copy's point on the quorum copy")
	older := point.DeepCopy()
	older.Time = metav1.NewTime(now.Add(-time.Minute))
	older.Consistency, older.CrashConsistentVMs, older.Message = srv1alpha1.ConsistencyApplication, nil, ""
	recordCopyPoint(t, e.Client(env.DR), *older)
	// Both copies reported; pg-sync has written the quorum status since the
	// DR copy's older point when Synced is seen again after a spec change.
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.Consistency = nil })
	copyConsistencyIs(t, e, "consistency removed", nil)
	lastPointIs("an older point of the DR copy does not replace the newer one")
}
