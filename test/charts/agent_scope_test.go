package charts

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestAgentWritesOnlyItsOwnNodeAndLease installs the workload chart's agent
// identity (ServiceAccount, roles, scope policy) in a real API server and acts
// with a token bound to an agent pod on node-1, as the kubelet mints it: the
// agent's own writes (the lost-quorum taint of node-1, its heartbeat Lease)
// pass; another node's taint, its own node's labels or schedulability, another
// node's Lease, the kubelet's Lease and a kube-system Lease are refused, and so
// is a token of the same ServiceAccount not bound to a pod.
func TestAgentWritesOnlyItsOwnNodeAndLease(t *testing.T) {
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, harness.Primary)
	cluster := zone.Clusters[harness.Primary]
	admin, ctx := cluster.Client, t.Context()
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "siterecovery-system"}}))
	for _, obj := range renderValues(t, "workload-control-plane", "siterecovery-system", nil) {
		if obj.GetLabels()["app.kubernetes.io/name"] == "drbd-node-agent" && obj.GetKind() != "DaemonSet" && obj.GetKind() != "Service" {
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	for _, n := range []string{"node-1", "node-2"} {
		require.NoError(t, admin.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"zone": "a"}}}))
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "siterecovery-system", Name: "drbd-node-agent-x"},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "drbd-node-agent",
			Containers: []corev1.Container{{Name: "agent", Image: "agent"}}}}
	require.NoError(t, admin.Create(ctx, pod))
	kubeletLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node-1"}}
	require.NoError(t, admin.Create(ctx, kubeletLease))

	clientWith := func(bound *authenticationv1.BoundObjectReference) client.Client {
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600)), BoundObjectRef: bound}}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "siterecovery-system", Name: "drbd-node-agent"}}
		require.NoError(t, admin.SubResource("token").Create(ctx, sa, tr))
		cfg := rest.AnonymousClientConfig(cluster.Config)
		cfg.BearerToken = tr.Status.Token
		c, err := client.New(cfg, client.Options{Scheme: s})
		require.NoError(t, err)
		return c
	}
	agent := clientWith(&authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID})
	unbound := clientWith(nil)

	taint := corev1.Taint{Key: srv1alpha1.LostQuorumTaintKey, Effect: corev1.TaintEffectNoSchedule}
	patchNode := func(c client.Client, name string, change func(*corev1.Node), opts ...client.PatchOption) error {
		n := &corev1.Node{}
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: name}, n))
		base := n.DeepCopy()
		change(n)
		return c.Patch(ctx, n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), opts...)
	}
	addTaint := func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, taint) }
	const policy = "siterecovery-drbd-node-agent-scope"
	refusedBy := func(t *testing.T, err error, says string) {
		t.Helper()
		require.Error(t, err)
		require.Contains(t, err.Error(), says)
	}
	// The API server picks a new policy up within a moment (a dry run, so
	// that a patch let through before changes nothing).
	require.Eventually(t, func() bool {
		err := patchNode(agent, "node-2", addTaint, client.DryRunAll)

		return err != nil && strings.Contains(err.Error(), policy)
	}, 30*time.Second, 100*time.Millisecond, "the policy never refused another node's taint")

	t.Run("the agent's own writes pass", func(t *testing.T) {
		require.NoError(t, patchNode(agent, "node-1", addTaint), "setting its node's lost-quorum taint")
		require.NoError(t, patchNode(agent, "node-1", func(n *corev1.Node) { n.Spec.Taints = nil }), "removing it")
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: srv1alpha1.AgentHeartbeatNamespace, Name: srv1alpha1.AgentHeartbeatName("node-1")},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-1"), LeaseDurationSeconds: ptr.To(int32(40))}}
		require.NoError(t, agent.Create(ctx, lease), "creating its heartbeat Lease")
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		require.NoError(t, agent.Update(ctx, lease), "renewing it")
	})

	t.Run("everything else is refused", func(t *testing.T) {
		refusedBy(t, patchNode(agent, "node-2", addTaint), "the drbd-node-agent of node node-1 may change only its own Node, not node-2")
		own := "the drbd-node-agent changes only the drbd.linbit.com/lost-quorum taint of its Node"
		refusedBy(t, patchNode(agent, "node-1", func(n *corev1.Node) { n.Labels["zone"] = "b" }), own)
		refusedBy(t, patchNode(agent, "node-1", func(n *corev1.Node) { n.Spec.Unschedulable = true }), own)
		refusedBy(t, patchNode(agent, "node-1", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute})
		}), own)
		leaseOnly := "the drbd-node-agent of node node-1 writes only the Lease kube-node-lease/siterecovery-agent-node-1"
		other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: srv1alpha1.AgentHeartbeatNamespace, Name: srv1alpha1.AgentHeartbeatName("node-2")}}
		refusedBy(t, agent.Create(ctx, other), leaseOnly)
		kl := &coordinationv1.Lease{}
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(kubeletLease), kl))
		kl.Spec.HolderIdentity = ptr.To("node-1")
		refusedBy(t, agent.Update(ctx, kl), leaseOnly)
		// Outside kube-node-lease RBAC grants no Lease at all.
		refusedBy(t, agent.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager"}}),
			`cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"`)
		// A token of the ServiceAccount not bound to a pod on a node.
		refusedBy(t, patchNode(unbound, "node-1", addTaint), "only with a token bound to its pod on a node")
	})
}
