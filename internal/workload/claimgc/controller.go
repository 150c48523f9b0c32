package claimgc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// The rights of the collector on its own cluster: it reads and updates the one
// DRBDAllocation, watches namespaces' metadata for deletions, and lists the
// DRBDResources that may still use a claim's values.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=drbdallocations,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=drbdresources,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch

// ControllerName names the controller, its events and its logs.
const ControllerName = "drbd-claim-gc"

// DefaultGrace is how old an orphaned claim must be before it is released.
const DefaultGrace = 10 * time.Minute

// Events on the DRBDAllocation.
const (
	// EventClaimReleased: a claim of a gone DR namespace was dropped.
	EventClaimReleased = "ClaimReleased"
	// EventClaimHeld: a claim of a gone DR namespace is kept because a
	// DRBDResource still uses its values.
	EventClaimHeld = "OrphanedClaimHeld"
)

// Reconciler releases the orphaned claims of the cluster's DRBDAllocation.
type Reconciler struct {
	// Reader reads without the cache: a claim is dropped only on what the API
	// server says now.
	Reader   client.Reader
	Client   client.Client
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	Grace    time.Duration
}

// Options tune the collector.
type Options struct {
	// Grace is how old an orphaned claim must be before it is released;
	// DefaultGrace when zero.
	Grace time.Duration
}

// SetupWithManager registers the collector. It wakes when the allocation
// changes, when a namespace starts terminating or is gone, and when a
// DRBDResource is deleted (an orphan it held may be free now).
func SetupWithManager(mgr ctrl.Manager, o Options) error {
	r := &Reconciler{
		Reader:   mgr.GetAPIReader(),
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorderFor(ControllerName),
		Clock:    clock.RealClock{},
		Grace:    o.Grace,
	}
	if r.Grace == 0 {
		r.Grace = DefaultGrace
	}
	toAllocation := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: srv1alpha1.DRBDAllocationName}}}
	})
	namespaceMeta := &metav1.PartialObjectMetadata{}
	namespaceMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&srv1alpha1.DRBDAllocation{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == srv1alpha1.DRBDAllocationName
		}))).
		Watches(namespaceMeta, toAllocation, builder.OnlyMetadata, builder.WithPredicates(leaving)).
		Watches(&srv1alpha1.DRBDResource{}, toAllocation, builder.WithPredicates(deleted)).
		Complete(r)
}

// leaving passes a namespace that starts terminating or is deleted.
var leaving = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	},
}

// deleted passes deletions only.
var deleted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
}

// Reconcile releases the claims of gone DR namespaces that nothing uses. It
// writes nothing while every claim's DR namespace exists, and reads nothing
// more than the allocation and one namespace per DR namespace named in it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Name != srv1alpha1.DRBDAllocationName {
		return ctrl.Result{}, nil
	}
	a := &srv1alpha1.DRBDAllocation{}
	if err := r.Reader.Get(ctx, req.NamespacedName, a); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	gone, err := r.goneNamespaces(ctx, a.Spec.Claims)
	if err != nil || len(gone) == 0 {
		return ctrl.Result{}, err
	}
	resources := &srv1alpha1.DRBDResourceList{}
	if err := r.Reader.List(ctx, resources); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing DRBDResources: %w", err)
	}
	v := judge(a.Spec.Claims, gone, resources.Items, r.Clock.Now(), r.Grace)
	for _, h := range v.held {
		r.Recorder.Eventf(a, corev1.EventTypeWarning, EventClaimHeld,
			"the claim of ProtectionRequest %s/%s (uid %s, %s) is kept although DR namespace %s is gone from this cluster: DRBDResource %s still uses its values. Delete that DRBDResource if its VM is no longer protected; the claim is then released",
			h.claim.DRNamespace, h.claim.Request, h.claim.RequestUID, values(h.claim), h.claim.DRNamespace, h.by)
	}
	if len(v.release) > 0 {
		if err := r.release(ctx, a, v.release); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: v.recheckAfter}, nil
}

// goneNamespaces returns the DR namespaces named by claims that are gone or
// terminating here.
func (r *Reconciler) goneNamespaces(ctx context.Context, claims []srv1alpha1.DRBDClaim) (map[string]bool, error) {
	gone := map[string]bool{}
	seen := map[string]bool{}
	for _, c := range claims {
		if seen[c.DRNamespace] {
			continue
		}
		seen[c.DRNamespace] = true
		ns := &metav1.PartialObjectMetadata{}
		ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		switch err := r.Reader.Get(ctx, types.NamespacedName{Name: c.DRNamespace}, ns); {
		case apierrors.IsNotFound(err):
			gone[c.DRNamespace] = true
		case err != nil:
			return nil, fmt.Errorf("reading namespace %s: %w", c.DRNamespace, err)
		case ns.GetDeletionTimestamp() != nil:
			gone[c.DRNamespace] = true
		}
	}
	return gone, nil
}

// release drops the claims with an update that carries the read's
// resourceVersion: a quorum-manager that claimed in between makes it
// conflict, and the next reconcile judges the new state.
func (r *Reconciler) release(ctx context.Context, a *srv1alpha1.DRBDAllocation, claims []srv1alpha1.DRBDClaim) error {
	before := a.DeepCopy()
	a.Spec.Claims = slices.DeleteFunc(a.Spec.Claims, func(c srv1alpha1.DRBDClaim) bool {
		return slices.ContainsFunc(claims, func(x srv1alpha1.DRBDClaim) bool { return x.RequestUID == c.RequestUID })
	})
	if err := r.Client.Update(ctx, a); err != nil {
		return fmt.Errorf("releasing orphaned DRBD claims: %w", err)
	}
	logger := log.FromContext(ctx)
	for _, c := range claims {
		logger.Info("released an orphaned DRBD claim", "drNamespace", c.DRNamespace, "request", c.Request, "requestUID", c.RequestUID, "port", c.Port, "minors", c.Minors)
		r.Recorder.Eventf(before, corev1.EventTypeNormal, EventClaimReleased,
			"released the claim of ProtectionRequest %s/%s (uid %s, %s): DR namespace %s is gone from this cluster and no DRBDResource uses these values",
			c.DRNamespace, c.Request, c.RequestUID, values(c), c.DRNamespace)
	}
	return nil
}

// values says a claim's port and minors for people.
func values(c srv1alpha1.DRBDClaim) string {
	ms := make([]string, len(c.Minors))
	for i, m := range c.Minors {
		ms[i] = fmt.Sprint(m)
	}
	return fmt.Sprintf("port %d, minors %s", c.Port, strings.Join(ms, ","))
}
