package zone_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	remotefake "github.com/siterecovery/siterecovery/internal/quorum/remote/fake"
	"github.com/siterecovery/siterecovery/internal/quorum/zone"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
users: [{name: u, user: %s}]
`

// A zone's Reachable conditions follow the verdicts of the cluster cache: a
// connection without a verdict is Unknown, then True or False with the
// cache's reason; a kubeconfig that runs a plugin is refused.
func TestReachableFollowsTheClusterCache(t *testing.T) {
	ctx := context.Background()
	secret := func(name, user string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: name},
			Data: map[string][]byte{srv1alpha1.KubeconfigSecretKey: []byte(fmtKubeconfig(user))}}
	}
	z := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "zone", Generation: 1},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
			{Name: "primary", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "primary"}},
			{Name: "dr", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "dr"}}}}}
	s := scheme.New()
	quorum := remotefake.NewClient(s, z, secret("primary", "{token: s3cret}"), secret("dr", "{exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}}"))
	clusters := remotefake.New(s)
	r := &zone.Reconciler{Client: quorum, Remote: clusters, Recorder: record.NewFakeRecorder(32)}
	reachable := func(cluster string) string {
		t.Helper()
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(z)})
		require.NoError(t, err)
		got := &srv1alpha1.ProtectionZone{}
		require.NoError(t, quorum.Get(ctx, client.ObjectKeyFromObject(z), got))
		for _, st := range got.Status.Clusters {
			if st.Name == cluster {
				c := meta.FindStatusCondition(st.Conditions, srv1alpha1.ConditionReachable)
				require.NotNil(t, c)
				require.NotContains(t, c.Message, "s3cret")
				return string(c.Status) + "/" + c.Reason
			}
		}
		t.Fatalf("no status of cluster %s", cluster)
		return ""
	}
	primary := remote.Key{Namespace: "dr", Zone: "zone", Cluster: "primary"}

	require.Equal(t, "Unknown/"+srv1alpha1.ReasonProgressing, reachable("primary"), "connected, no verdict yet")
	require.Equal(t, "False/"+srv1alpha1.ReasonKubeconfigForbidden, reachable("dr"))
	require.Equal(t, []remote.Key{primary}, clusters.Clusters("dr", "zone"), "only the valid kubeconfig connects")

	clusters.SetState(primary, remote.Reachable)
	require.Equal(t, "True/"+srv1alpha1.ReasonAPIServerReachable, reachable("primary"))
	clusters.SetState(primary, remote.Unreachable)
	require.Equal(t, "False/"+srv1alpha1.ReasonAPIServerDown, reachable("primary"))

	// A cluster that leaves the zone is disconnected.
	got := &srv1alpha1.ProtectionZone{}
	require.NoError(t, quorum.Get(ctx, client.ObjectKeyFromObject(z), got))
	got.Spec.Clusters = got.Spec.Clusters[1:]
	require.NoError(t, quorum.Update(ctx, got))
	reachable("dr")
	require.Empty(t, clusters.Clusters("dr", "zone"))
}

func fmtKubeconfig(user string) string { return fmt.Sprintf(kubeconfig, user) }
