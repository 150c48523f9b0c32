package zone_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

func reachable(ctx context.Context, c client.Client, cluster string, want metav1.ConditionStatus, reason string) func() error {
	return func() error {
		z := &srv1alpha1.ProtectionZone{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.ZoneName}, z); err != nil {
			return err
		}
		for _, st := range z.Status.Clusters {
			if st.Name != cluster {
				continue
			}
			cond := meta.FindStatusCondition(st.Conditions, srv1alpha1.ConditionReachable)
			if cond == nil {
				return fmt.Errorf("%s has no Reachable condition", cluster)
			}
			if cond.Status != want || (reason != "" && cond.Reason != reason) {
				return fmt.Errorf("%s Reachable=%s/%s (%s), want %s/%s", cluster, cond.Status, cond.Reason, cond.Message, want, reason)
			}
			return nil
		}
		return fmt.Errorf("%s not in status", cluster)
	}
}

func TestZoneReachabilityFollowsOutagesAndSecrets(t *testing.T) {
	e := env.New(t, env.Options{})
	e.StartQuorum(t, setup.QuorumOptions{ProbeInterval: 200 * time.Millisecond})
	ctx := context.Background()
	q := e.Client(env.Quorum)

	env.Eventually(t, 20*time.Second, "primary reachable", reachable(ctx, q, env.Primary, metav1.ConditionTrue, srv1alpha1.ReasonAPIServerReachable))
	env.Eventually(t, 20*time.Second, "dr reachable", reachable(ctx, q, env.DR, metav1.ConditionTrue, srv1alpha1.ReasonAPIServerReachable))

	// An outage of the primary's API server is reported, and so is its return.
	require.NoError(t, e.Clusters[env.Primary].StopAPIServer())
	env.Eventually(t, 20*time.Second, "primary unreachable", reachable(ctx, q, env.Primary, metav1.ConditionFalse, srv1alpha1.ReasonAPIServerDown))
	require.NoError(t, reachable(ctx, q, env.DR, metav1.ConditionTrue, "")())
	require.NoError(t, e.Clusters[env.Primary].StartAPIServer())
	env.Eventually(t, 20*time.Second, "primary back", reachable(ctx, q, env.Primary, metav1.ConditionTrue, srv1alpha1.ReasonAPIServerReachable))

	// An exec kubeconfig is refused with a condition that says why and leaks nothing.
	secret := &corev1.Secret{}
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.DR + "-kubeconfig"}, secret))
	good := secret.Data[srv1alpha1.KubeconfigSecretKey]
	secret.Data[srv1alpha1.KubeconfigSecretKey] = []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token, args: [--secret=hunter2]}}}]
`)
	require.NoError(t, q.Update(ctx, secret))
	env.Eventually(t, 20*time.Second, "exec kubeconfig refused", reachable(ctx, q, env.DR, metav1.ConditionFalse, srv1alpha1.ReasonKubeconfigForbidden))
	z := &srv1alpha1.ProtectionZone{}
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.ZoneName}, z))
	require.NotContains(t, fmt.Sprint(z.Status), "hunter2")
	require.True(t, meta.IsStatusConditionFalse(z.Status.Conditions, srv1alpha1.ConditionReady))

	// Restoring the Secret reconnects.
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.DR + "-kubeconfig"}, secret))
	secret.Data[srv1alpha1.KubeconfigSecretKey] = good
	require.NoError(t, q.Update(ctx, secret))
	env.Eventually(t, 20*time.Second, "dr reconnected", reachable(ctx, q, env.DR, metav1.ConditionTrue, srv1alpha1.ReasonAPIServerReachable))
}

// TestClusterDownAtStartIsConnectedOnItsReturn: a workload cluster whose API
// server is down when quorum-manager starts is reported down, not as a bad
// kubeconfig, and is connected once it answers: a connection never made has
// no prober to notice the return, so the zone tries again by itself.
func TestClusterDownAtStartIsConnectedOnItsReturn(t *testing.T) {
	e := env.New(t, env.Options{})
	require.NoError(t, e.Clusters[env.Primary].StopAPIServer())
	e.StartQuorum(t, setup.QuorumOptions{ProbeInterval: 200 * time.Millisecond})
	ctx := context.Background()
	q := e.Client(env.Quorum)

	env.Eventually(t, 20*time.Second, "dr reachable", reachable(ctx, q, env.DR, metav1.ConditionTrue, srv1alpha1.ReasonAPIServerReachable))
	env.Eventually(t, 20*time.Second, "primary down", reachable(ctx, q, env.Primary, metav1.ConditionFalse, srv1alpha1.ReasonAPIServerDown))
	require.NoError(t, e.Clusters[env.Primary].StartAPIServer())
	env.Eventually(t, 30*time.Second, "primary connected on its return", reachable(ctx, q, env.Primary, metav1.ConditionTrue, srv1alpha1.ReasonAPIServerReachable))
}
