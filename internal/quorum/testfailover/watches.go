package testfailover

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// remoteEvents wakes a test when one of its VMs or PVCs changes on a workload
// cluster. Both kinds are already watched by other quorum controllers, so the
// shared remote caches gain no informer.
func (r *Reconciler) remoteEvents() source.Source {
	return r.Remote.Source(ControllerName, remote.Events{Kinds: []remote.Kind{
		{Object: &kubevirtv1.VirtualMachine{}, Map: r.testOf},
		{Object: &corev1.PersistentVolumeClaim{}, Map: r.testOf},
	}})
}

// testOf maps an object labelled by a test of this DR namespace to the test.
func (r *Reconciler) testOf(_ context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	name, ok := l[LabelName]
	if !ok || l[LabelDRNamespace] != key.Namespace {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: key.Namespace, Name: name}}}
}
