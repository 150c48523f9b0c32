package fence_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/fence"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// TestTaintedNodes: each replica's node is read once; only the lost-quorum
// taint counts, and a node that is gone carries none.
func TestTaintedNodes(t *testing.T) {
	node := func(name string, taints ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, k := range taints {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule})
		}
		return n
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		node("b", srv1alpha1.LostQuorumTaintKey), node("a", srv1alpha1.LostQuorumTaintKey, "other"), node("c", "other")).Build()
	replica := func(n string) srv1alpha1.DRBDResource {
		return srv1alpha1.DRBDResource{Spec: srv1alpha1.DRBDResourceSpec{NodeName: n}}
	}
	got, err := fence.TaintedNodes(t.Context(), c, []srv1alpha1.DRBDResource{replica("b"), replica("c"), replica("a"), replica("b"), replica("gone"), replica("")})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, got)
}
