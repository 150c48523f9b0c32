package protectiongroup

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// replicaEventDelay is how long a DRBDResource or Node event, or a change of
// a group that leaves its spec alone (its own status writes), waits before it
// wakes the group. Those events only refresh status.drbd (spec.drbd comes
// with the group's spec changes, which are not delayed), and the agents
// report a failover step's replicas one by one: while the group waits in the
// queue further events of it merge into the same reconcile, so a step costs a
// few status writes of the group instead of one per replica.
const replicaEventDelay = time.Second

// sameGeneration passes the updates that GenerationChangedPredicate drops.
var sameGeneration = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld != nil && e.ObjectNew != nil && e.ObjectOld.GetGeneration() == e.ObjectNew.GetGeneration()
	},
}

// promoted passes the DRBDResource updates that report the replica newly
// Primary: a group asked to run waits for them (startHold), so they are not
// delayed.
var promoted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*srv1alpha1.DRBDResource)
		n, ok2 := e.ObjectNew.(*srv1alpha1.DRBDResource)
		primary := string(srv1alpha1.RolePrimary)
		return ok1 && ok2 && n.Status.Role == primary && o.Status.Role != primary
	},
}
