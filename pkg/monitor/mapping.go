package monitor

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/pkg/protection"
	"github.com/siterecovery/siterecovery/pkg/remote"
)

// groupOfDRBDResource maps a workload DRBDResource to its quorum group by the
// protection-group label.
func groupOfDRBDResource(_ context.Context, key remote.Key, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	name := l[srv1alpha1.ProtectionGroupLabel]
	if name == "" {
		return nil
	}
	if ns := l[protection.LabelDRNamespace]; ns != "" && ns != key.Namespace {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: key.Namespace, Name: name}}}
}

// zoneChanged re-evaluates every group of a zone whose cluster became
// (un)reachable: its side is then read, or no longer trusted.
func (r *Reconciler) zoneChanged(key remote.Key) {
	groups := &srv1alpha1.ProtectionGroupList{}
	if err := r.Client.List(context.Background(), groups, client.InNamespace(key.Namespace)); err != nil {
		return
	}
	for _, g := range groups.Items {
		if g.Spec.ZoneRef != nil && g.Spec.ZoneRef.Name == key.Zone {
			r.send(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&g)})
		}
	}
}

// send queues a group for evaluation. A full channel drops the event: the
// polling interval bounds how long the group waits for its next evaluation.
func (r *Reconciler) send(req reconcile.Request) {
	obj := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
	select {
	case r.events <- event.GenericEvent{Object: obj}:
	default:
	}
}
