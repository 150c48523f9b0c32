package rgd

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// The receiving PVCs are created once: later reconciles find them in the cache
// and send no create the API server would refuse as already there.
func TestReceivingPVCsAreCreatedOnce(t *testing.T) {
	g := &drv1alpha1.ReplicationGroupDestination{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns",
		Finalizers: []string{Finalizer}}}
	for _, p := range []string{"disk-0", "disk-1", "disk-2"} {
		g.Spec.RDSpecs = append(g.Spec.RDSpecs, drv1alpha1.VolSyncReplicationDestinationSpec{
			ProtectedPVC: drv1alpha1.VolSyncProtectedPVC{Name: p, StorageClassName: ptr.To("cephfs")}})
	}
	creates := 0
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(g).WithStatusSubresource(g).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.PersistentVolumeClaim); ok {
				creates++
			}
			return c.Create(ctx, obj, opts...)
		}}).Build()
	r := &Reconciler{Client: c, Clock: clock.RealClock{}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(g)}
	for range 3 {
		_, err := r.Reconcile(t.Context(), req)
		require.NoError(t, err)
	}
	require.Equal(t, 3, creates, "one create per receiving PVC, on the first reconcile only")
	pvcs := &corev1.PersistentVolumeClaimList{}
	require.NoError(t, c.List(t.Context(), pvcs, client.InNamespace("ns")))
	require.Len(t, pvcs.Items, 3)
}
