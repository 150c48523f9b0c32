package nodeagent

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// The agent's heartbeat Lease, in srv1alpha1.AgentHeartbeatNamespace only (a
// Role there). The workload chart's siterecovery-drbd-node-agent-scope policy
// narrows it to the Lease of the node in the agent's pod-bound token.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=kube-node-lease

// DefaultHeartbeatInterval is how often the agent renews its heartbeat Lease.
const DefaultHeartbeatInterval = 10 * time.Second

// heartbeatMisses is how many renewals in a row may be missed before the
// Lease expires: one slow API call is not an agent down.
const heartbeatMisses = 4

// Heartbeat renews the node's agent Lease (srv1alpha1.AgentHeartbeatName)
// every Interval, with a duration of heartbeatMisses intervals. It writes once
// per renewal and never reads in between.
type Heartbeat struct {
	Client client.Client
	// Reader reads the Lease from the API server: a cached read would make
	// the agent watch every Lease of the cluster.
	Reader   client.Reader
	Node     string
	Interval time.Duration
	Clock    clock.WithTicker
	Log      logr.Logger
}

// Start renews the Lease until ctx ends. A failed renewal is logged and
// retried at the next tick: the Lease has more renewals left.
func (h *Heartbeat) Start(ctx context.Context) error {
	if h.Interval <= 0 {
		h.Interval = DefaultHeartbeatInterval
	}
	if h.Clock == nil {
		h.Clock = clock.RealClock{}
	}
	tick := h.Clock.NewTicker(h.Interval)
	defer tick.Stop()
	var lease *coordinationv1.Lease
	for {
		var err error
		if lease, err = h.renew(ctx, lease); err != nil && ctx.Err() == nil {
			h.Log.Error(err, "renewing the agent heartbeat Lease")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
	}
}

// renew writes the Lease: an update of the copy from the last renewal, or a
// get and create/update when there is none or it is out of date.
func (h *Heartbeat) renew(ctx context.Context, last *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	now := metav1.NewMicroTime(h.Clock.Now())
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To("drbd-node-agent/" + h.Node),
		LeaseDurationSeconds: ptr.To(int32((heartbeatMisses * h.Interval).Round(time.Second) / time.Second)),
		RenewTime:            &now,
	}
	if last != nil {
		l := last.DeepCopy()
		l.Spec = spec
		l.Spec.AcquireTime = last.Spec.AcquireTime
		if err := h.Client.Update(ctx, l); err == nil {
			return l, nil
		} else if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return last, err
		}
	}
	l := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: srv1alpha1.AgentHeartbeatNamespace, Name: srv1alpha1.AgentHeartbeatName(h.Node)}
	err := h.Reader.Get(ctx, key, l)
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Spec: spec}
		l.Spec.AcquireTime = &now
		return l, h.Client.Create(ctx, l)
	}
	if err != nil {
		return nil, err
	}
	acquired := l.Spec.AcquireTime
	l.Spec = spec
	l.Spec.AcquireTime = acquired
	return l, h.Client.Update(ctx, l)
}
