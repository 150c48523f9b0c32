package fake

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// StatusSubresources are the kinds an API server serves with a status
// subresource: an update of the object leaves their status alone, as it would
// on a real cluster.
func StatusSubresources() []client.Object {
	return []client.Object{
		&srv1alpha1.DRBDResource{}, &srv1alpha1.ProtectionGroup{}, &srv1alpha1.FailoverRequest{},
		&srv1alpha1.ReplicationGroupStatus{}, &srv1alpha1.RPOEvent{}, &srv1alpha1.ProtectionRequest{},
		&srv1alpha1.ProtectionZone{}, &srv1alpha1.TestFailover{},
		&drv1alpha1.DRPolicy{}, &drv1alpha1.DRPlacementControl{}, &drv1alpha1.VolumeReplicationGroup{},
		&drv1alpha1.ReplicationGroupSource{}, &drv1alpha1.ReplicationGroupDestination{},
		&kubevirtv1.VirtualMachine{}, &kubevirtv1.VirtualMachineInstance{},
		&corev1.PersistentVolumeClaim{}, &corev1.Pod{}, &corev1.Node{},
	}
}

// NewClient returns a controller-runtime fake client holding objs, with the
// status subresources of StatusSubresources: for the quorum cluster of a test.
func NewClient(scheme *runtime.Scheme, objs ...client.Object) client.WithWatch {
	return newClient(scheme, interceptor.Funcs{}, objs)
}

func newClient(scheme *runtime.Scheme, funcs interceptor.Funcs, objs []client.Object) client.WithWatch {
	return crfake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(StatusSubresources()...).
		WithObjects(objs...).
		WithInterceptorFuncs(funcs).
		Build()
}
