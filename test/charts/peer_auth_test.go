package charts

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestPeerAuthSecretsAccess installs the workload chart's DRBD peer-auth
// objects for two DR namespaces and acts, on the real API server, as each
// identity the chart binds, its admission policies in force: the quorum
// identity of dr-a writes and reads its own peer secrets (the quorum guard
// lets them through), deletes its own, and is refused dr-b's and the
// deletion of one not labelled for dr-a (the guard); the drbd-node-agent gets a peer
// secret by name and is refused listing them, writing them, and any Secret
// of a DR namespace, an application namespace or kube-system.
func TestPeerAuthSecretsAccess(t *testing.T) {
	harness.RequireAPIServers(t)
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, harness.Primary)
	cl := zone.Clusters[harness.Primary]
	ctx := t.Context()
	admin := cl.Client
	values := map[string]any{"quorumAccess": map[string]any{"drNamespaces": []any{"dr-a", "dr-b"}}}
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "siterecovery-system"}}))
	for _, obj := range renderValues(t, "workload-control-plane", "siterecovery-system", values) {
		if obj.GetKind() == "Namespace" {
			require.NoError(t, client.IgnoreAlreadyExists(admin.Create(ctx, obj)), "Namespace %s", obj.GetName())
		}
	}
	for _, obj := range renderValues(t, "workload-control-plane", "siterecovery-system", values) {
		switch obj.GetKind() {
		case "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "ServiceAccount",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			require.NoError(t, client.IgnoreAlreadyExists(admin.Create(ctx, obj)), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}))
	secret := func(ns, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string][]byte{srv1alpha1.PeerAuthSecretKey: []byte("c2VjcmV0LXZhbHVlLWZvci10ZXN0LTAxMjM0NTY3")}}
	}
	peerA, peerB := srv1alpha1.PeerAuthNamespace("dr-a"), srv1alpha1.PeerAuthNamespace("dr-b")
	for _, s := range []*corev1.Secret{secret(peerB, "vm-b"), secret("dr-a", "quorum-manager-token"), secret("apps", "vm-credentials"), secret("kube-system", "bootstrap")} {
		require.NoError(t, admin.Create(ctx, s))
	}

	quorumA := actingAs(t, cl.Config, "system:serviceaccount:dr-a:quorum-manager", "system:serviceaccounts", "system:serviceaccounts:dr-a")
	// The chart's quorum guard is in force (it refuses an unlabelled
	// ConfigMap in an application namespace), and still lets the peer
	// secret through.
	require.Eventually(t, func() bool {
		err := quorumA.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "probe"}}, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "siterecovery-quorum-access-guard")
	}, 30*time.Second, 100*time.Millisecond, "the quorum guard never took effect")
	s := secret(peerA, "vm-a")
	s.Labels = map[string]string{srv1alpha1.DRNamespaceLabel: "dr-a"} // as protection labels it
	require.NoError(t, quorumA.Create(ctx, s), "quorum-manager of dr-a creates its peer secret")
	require.NoError(t, quorumA.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{}))
	s.Data[srv1alpha1.PeerAuthSecretKey] = []byte("cm90YXRlZC1zZWNyZXQtZm9yLXRlc3QtMDEyMzQ1Njc")
	require.NoError(t, quorumA.Update(ctx, s), "and rotates it")
	unlabelled := secret(peerA, "vm-unlabelled")
	require.NoError(t, admin.Create(ctx, unlabelled))
	removed := secret(peerA, "vm-removed")
	removed.Labels = s.Labels
	require.NoError(t, quorumA.Create(ctx, removed))
	require.NoError(t, quorumA.Delete(ctx, removed), "and deletes one when its protection goes")
	for what, err := range map[string]error{
		"read dr-b's peer secret":         quorumA.Get(ctx, client.ObjectKey{Namespace: peerB, Name: "vm-b"}, &corev1.Secret{}),
		"replace dr-b's peer secret":      quorumA.Update(ctx, secret(peerB, "vm-b")),
		"create in dr-b's":                quorumA.Create(ctx, secret(peerB, "forged")),
		"delete dr-b's peer secret":       quorumA.Delete(ctx, secret(peerB, "vm-b")),
		"delete one not labelled its own": quorumA.Delete(ctx, unlabelled),
		"list its peer secrets":           quorumA.List(ctx, &corev1.SecretList{}, client.InNamespace(peerA)),
	} {
		assert.True(t, apierrors.IsForbidden(err), "quorum-manager of dr-a may not %s: %v", what, err)
	}

	agent := actingAs(t, cl.Config, "system:serviceaccount:siterecovery-system:drbd-node-agent", "system:serviceaccounts", "system:serviceaccounts:siterecovery-system")
	require.NoError(t, agent.Get(ctx, client.ObjectKey{Namespace: peerA, Name: "vm-a"}, &corev1.Secret{}), "the agent gets a peer secret")
	require.NoError(t, agent.Get(ctx, client.ObjectKey{Namespace: peerB, Name: "vm-b"}, &corev1.Secret{}), "of every DR namespace")
	for what, err := range map[string]error{
		"list peer secrets":               agent.List(ctx, &corev1.SecretList{}, client.InNamespace(peerA)),
		"write a peer secret":             agent.Create(ctx, secret(peerA, "forged")),
		"read a DR namespace's Secret":    agent.Get(ctx, client.ObjectKey{Namespace: "dr-a", Name: "quorum-manager-token"}, &corev1.Secret{}),
		"read an application's Secret":    agent.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "vm-credentials"}, &corev1.Secret{}),
		"read a kube-system Secret":       agent.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "bootstrap"}, &corev1.Secret{}),
		"list Secrets of every namespace": agent.List(ctx, &corev1.SecretList{}),
	} {
		assert.True(t, apierrors.IsForbidden(err), "the agent may not %s: %v", what, err)
	}
}
