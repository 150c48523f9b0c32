package zone

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/kubeconfig"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "protectionzone"

// connectRetry is how often a cluster whose API server did not answer the
// first connection is tried again.
const connectRetry = 10 * time.Second

// RBAC on the quorum cluster, in the DR namespace: the controller reads
// zones and the kubeconfig Secrets they name, and writes zone status and events.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectionzones/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler connects zone clusters and reports their reachability.
type Reconciler struct {
	Client   client.Client
	Remote   remote.Connector
	Recorder record.EventRecorder
}

// SetupWithManager registers the controller. Health changes of remote clusters
// and changes of kubeconfig Secrets enqueue the zone.
func SetupWithManager(mgr ctrl.Manager, rm remote.Connector) error {
	r := &Reconciler{Client: mgr.GetClient(), Remote: rm, Recorder: mgr.GetEventRecorderFor(ControllerName)}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&srv1alpha1.ProtectionZone{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.zonesUsingSecret)).
		WatchesRawSource(rm.Source(ControllerName, remote.Events{Clusters: remote.ZoneRequests})).
		Complete(r)
}

// Reconcile connects every cluster of the zone and writes their conditions.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	zone := &srv1alpha1.ProtectionZone{}
	if err := r.Client.Get(ctx, req.NamespacedName, zone); err != nil {
		if apierrors.IsNotFound(err) {
			for _, k := range r.Remote.Clusters(req.Namespace, req.Name) {
				r.Remote.Disconnect(k)
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := zone.DeepCopy()
	wanted := map[string]bool{}
	statuses := make([]srv1alpha1.ClusterStatus, 0, len(zone.Spec.Clusters))
	for _, zc := range zone.Spec.Clusters {
		wanted[zc.Name] = true
		statuses = append(statuses, r.reconcileCluster(ctx, zone, zc))
	}
	for _, k := range r.Remote.Clusters(zone.Namespace, zone.Name) {
		if !wanted[k.Cluster] {
			r.Remote.Disconnect(k)
		}
	}
	zone.Status.Clusters = statuses
	zone.Status.ObservedGeneration = zone.Generation
	setReady(zone)
	// A cluster that could not be connected has no prober to report its
	// return: the zone tries again on its own.
	var res ctrl.Result
	for _, st := range statuses {
		if c := meta.FindStatusCondition(st.Conditions, srv1alpha1.ConditionReachable); c != nil && c.Reason == srv1alpha1.ReasonAPIServerDown &&
			r.Remote.Health(remote.Key{Namespace: zone.Namespace, Zone: zone.Name, Cluster: st.Name}).State == remote.NotConnected {
			res.RequeueAfter = connectRetry
		}
	}
	if equality.Semantic.DeepEqual(before.Status, zone.Status) {
		return res, nil
	}
	// An update with the resourceVersion read: a stale read fails with a
	// conflict and is retried with a fresh copy.
	out, err := flow.NewStatusWriter(r.Client, nil).Write(ctx, zone, flow.Change{Changed: true})
	if out.Wrote {
		r.recordTransitions(before, zone)
	}
	return res, err
}

func (r *Reconciler) reconcileCluster(ctx context.Context, zone *srv1alpha1.ProtectionZone, zc srv1alpha1.ZoneCluster) srv1alpha1.ClusterStatus {
	st := previousStatus(zone, zc.Name)
	key := remote.Key{Namespace: zone.Namespace, Zone: zone.Name, Cluster: zc.Name}
	cond := metav1.Condition{Type: srv1alpha1.ConditionReachable, ObservedGeneration: zone.Generation}
	data, reason, err := r.kubeconfig(ctx, zone.Namespace, zc.KubeconfigSecretRef)
	if err == nil {
		err = r.Remote.Connect(ctx, key, data, limits(zc.Client))
		switch {
		case errors.Is(err, kubeconfig.ErrNotAllowed):
			reason = srv1alpha1.ReasonKubeconfigForbidden
		case errors.Is(err, remote.ErrUnreachable):
			reason = srv1alpha1.ReasonAPIServerDown
		case err != nil:
			reason = srv1alpha1.ReasonKubeconfigInvalid
		}
	}
	switch h := r.Remote.Health(key); {
	case err != nil:
		r.Remote.Disconnect(key)
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, reason, err.Error()
	case h.Reachable():
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, h.Reason(), h.Message()
		st.ServerVersion = h.ServerVersion
		st.LastProbeTime = &metav1.Time{Time: h.LastSuccessTime}
	case h.Unreachable():
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, h.Reason(), h.Message()
	default:
		// Connecting: neither verdict yet.
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, srv1alpha1.ReasonProgressing, h.Message()
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

// kubeconfig reads a cluster's kubeconfig Secret. Errors name the Secret and key,
// never the content.
func (r *Reconciler) kubeconfig(ctx context.Context, namespace string, ref srv1alpha1.SecretKeyReference) ([]byte, string, error) {
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, srv1alpha1.ReasonSecretNotFound, fmt.Errorf("Secret %s/%s not found", namespace, ref.Name) //nolint:staticcheck // ST1005: the message starts with the Kind name and is the condition message users read
		}
		return nil, srv1alpha1.ReasonSecretNotFound, fmt.Errorf("reading Secret %s/%s: %w", namespace, ref.Name, err)
	}
	key := ref.Key
	if key == "" {
		key = srv1alpha1.KubeconfigSecretKey
	}
	data, ok := secret.Data[key]
	if !ok || len(data) == 0 {
		return nil, srv1alpha1.ReasonKubeconfigInvalid, fmt.Errorf("Secret %s/%s has no key %q", namespace, ref.Name, key) //nolint:staticcheck // ST1005: as above
	}
	return data, "", nil
}

func limits(c srv1alpha1.ClientSettings) remote.Limits {
	l := remote.Limits{QPS: 50, Burst: 100, Timeout: 15 * time.Second}
	if c.QPS > 0 {
		l.QPS = float32(c.QPS)
	}
	if c.Burst > 0 {
		l.Burst = int(c.Burst)
	}
	if c.TimeoutSeconds > 0 {
		l.Timeout = time.Duration(c.TimeoutSeconds) * time.Second
	}
	return l
}

func previousStatus(zone *srv1alpha1.ProtectionZone, name string) srv1alpha1.ClusterStatus {
	for _, st := range zone.Status.Clusters {
		if st.Name == name {
			return *st.DeepCopy()
		}
	}
	return srv1alpha1.ClusterStatus{Name: name}
}

func setReady(zone *srv1alpha1.ProtectionZone) {
	cond := metav1.Condition{Status: metav1.ConditionTrue, Reason: srv1alpha1.ReasonAPIServerReachable, Message: "every cluster is reachable"}
	for _, st := range zone.Status.Clusters {
		if c := meta.FindStatusCondition(st.Conditions, srv1alpha1.ConditionReachable); c == nil || c.Status != metav1.ConditionTrue {
			cond.Status, cond.Reason = metav1.ConditionFalse, srv1alpha1.ReasonAPIServerDown
			cond.Message = fmt.Sprintf("cluster %s is not reachable", st.Name)
			if c != nil {
				cond.Reason, cond.Message = c.Reason, fmt.Sprintf("cluster %s: %s", st.Name, c.Message)
			}
			break
		}
	}
	// A cluster that does not answer is retried on its own (Reconciling); a
	// missing Secret or an unusable kubeconfig waits for the operator (Stalled).
	flow.SetReady(&zone.Status.Conditions, zone.Generation, cond.Status, cond.Reason, cond.Message, false)
}

func (r *Reconciler) recordTransitions(before, after *srv1alpha1.ProtectionZone) {
	for _, st := range after.Status.Clusters {
		now := meta.FindStatusCondition(st.Conditions, srv1alpha1.ConditionReachable)
		was := meta.FindStatusCondition(previousStatus(before, st.Name).Conditions, srv1alpha1.ConditionReachable)
		if now == nil || (was != nil && was.Status == now.Status) || now.Status == metav1.ConditionUnknown {
			continue
		}
		kind := corev1.EventTypeNormal
		if now.Status != metav1.ConditionTrue {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(after, kind, now.Reason, "cluster %s: %s", st.Name, now.Message)
	}
}

func (r *Reconciler) zonesUsingSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	zones := &srv1alpha1.ProtectionZoneList{}
	if err := r.Client.List(ctx, zones, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, z := range zones.Items {
		for _, c := range z.Spec.Clusters {
			if c.KubeconfigSecretRef.Name == obj.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&z)})
				break
			}
		}
	}
	return reqs
}
