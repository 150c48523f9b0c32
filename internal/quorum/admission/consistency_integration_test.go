package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// consistency checks spec.consistency at admission (a subtest of
// TestQuorumWebhooks): the schema bounds freezeTimeoutSeconds; the webhook
// refuses mode Application in an Offloaded zone, on a new group and when an
// existing group's mode changes, saying what to write, and admits it in the
// DRBD zone, under protocol C and A (whose frozen cuts wait for the DR
// replicas to drain), and mode Crash anywhere.
func consistency(t *testing.T, e *env.Env, admin user) {
	ctx := context.Background()
	q := e.Client(env.Quorum)
	require.NoError(t, q.Create(ctx, &drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "array-c-d"},
		Spec: drv1alpha1.DRPolicySpec{DRClusters: []string{"c", "d"}, SchedulingInterval: "5m"}}))
	require.NoError(t, q.Create(ctx, &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "array"},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendOffloaded, Clusters: []srv1alpha1.ZoneCluster{
			{Name: "c", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: env.Primary + "-kubeconfig"}},
			{Name: "d", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: env.DR + "-kubeconfig"}}}}}))
	group := func(name, zone, active string, mode srv1alpha1.ConsistencyMode, seconds int32) *srv1alpha1.ProtectionGroup {
		return &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
			Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: active, ZoneRef: &srv1alpha1.LocalObjectReference{Name: zone},
				Consistency: &srv1alpha1.ConsistencySpec{Mode: mode, FreezeTimeoutSeconds: seconds}}}
	}
	dry := client.DryRunAll

	for _, s := range []int32{-1, 301} {
		err := admin.Create(ctx, group("bound", env.ZoneName, env.Primary, srv1alpha1.ConsistencyApplication, s), dry)
		require.ErrorContains(t, err, "spec.consistency.freezeTimeoutSeconds", "freeze bound %d", s)
		require.NotContains(t, err.Error(), "denied the request", "the schema refuses it before the webhook")
	}
	synchronous := group("drbd-app", env.ZoneName, env.Primary, srv1alpha1.ConsistencyApplication, 30)
	synchronous.Spec.Replication.Protocol = srv1alpha1.ProtocolC
	require.NoError(t, admin.Create(ctx, synchronous, dry))
	// Protocol A (the default): a frozen cut waits for the DR replicas to drain.
	require.NoError(t, admin.Create(ctx, group("drbd-async", env.ZoneName, env.Primary, srv1alpha1.ConsistencyApplication, 30), dry))

	const want = "spec.consistency.mode of ProtectionGroup array-app is Application, but zone array replicates with storageBackend Offloaded: the array cuts its points on its own schedule, with no moment to freeze the guests around, so each one is crash-consistent anyway; write mode: Crash (or remove spec.consistency), or protect the group in a DRBD or VolSync zone"
	denied(t, admin.Create(ctx, group("array-app", "array", "c", srv1alpha1.ConsistencyApplication, 30), dry), want)
	g := group("array-app", "array", "c", srv1alpha1.ConsistencyCrash, 30)
	require.NoError(t, admin.Create(ctx, g))
	g.Spec.Consistency.Mode = srv1alpha1.ConsistencyApplication
	denied(t, admin.Update(ctx, g, dry), want)
	require.NoError(t, admin.Delete(ctx, g))
}
