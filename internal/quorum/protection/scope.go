package protection

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// scope is one reconcile of one request.
type scope struct {
	req, before *srv1alpha1.ProtectionRequest
	now         time.Time

	zone           *srv1alpha1.ProtectionZone
	primaryCluster string
	target         string
	primary, dr    *remote.Remote
	events         []transitionEvent
	requeueAfter   time.Duration

	// stayOn is, while protection is removed, the cluster the VM stays on.
	stayOn string
}

// transitionEvent is an event recorded once the status that carries the
// transition is written. kind overrides the type eventType derives from phase.
type transitionEvent struct {
	phase           srv1alpha1.ProtectionPhase
	kind            string
	reason, message string
}

// enter records entering phase p: status, phase history and (after the status
// is written) an event.
func (s *scope) enter(p srv1alpha1.ProtectionPhase, message string) {
	s.enterWithReason(p, string(p), message)
}

func (s *scope) enterWithReason(p srv1alpha1.ProtectionPhase, reason, message string) {
	if message == "" {
		message = "entered " + string(p)
	}
	s.req.Status.Phase = p
	s.req.Status.PhaseHistory = append(s.req.Status.PhaseHistory, srv1alpha1.PhaseTransition{
		Phase: string(p), Time: metav1.NewMicroTime(s.now), Message: truncate(message),
	})
	s.events = append(s.events, transitionEvent{phase: p, reason: reason, message: message})
	if p != srv1alpha1.ProtectionFailed && p != srv1alpha1.ProtectionProtected {
		setCondition(s.req, srv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonProgressing, "%s", message)
	}
}

// wait leaves the request in its phase with Ready=False and a reason; the watch
// that ends the wait (or requeueAfter) wakes the controller.
func (s *scope) wait(reason, format string, args ...any) {
	setCondition(s.req, srv1alpha1.ConditionReady, metav1.ConditionFalse, reason, format, args...)
}

// requeue asks for a wake-up after d at the latest.
func (s *scope) requeue(d time.Duration) {
	if d > 0 && (s.requeueAfter == 0 || d < s.requeueAfter) {
		s.requeueAfter = d
	}
}

// enteredAt is when the request last entered phase p.
func (s *scope) enteredAt(p srv1alpha1.ProtectionPhase) time.Time {
	for i := len(s.req.Status.PhaseHistory) - 1; i >= 0; i-- {
		if h := s.req.Status.PhaseHistory[i]; h.Phase == string(p) {
			return h.Time.Time
		}
	}
	return s.now
}

func (s *scope) vmKey() types.NamespacedName {
	return types.NamespacedName{Namespace: s.req.Spec.VirtualMachine.Namespace, Name: s.req.Spec.VirtualMachine.Name}
}

func (s *scope) vmNamespace() string { return s.req.Spec.VirtualMachine.Namespace }

// load reads the zone, resolves the primary and target clusters and gets both
// remote connections. A missing or wrong zone fails the request; a cluster that
// is not connected is a wait.
func (r *Reconciler) load(ctx context.Context, s *scope) error {
	if s.primary != nil && s.dr != nil {
		return nil
	}
	zone := &srv1alpha1.ProtectionZone{}
	key := types.NamespacedName{Namespace: s.req.Namespace, Name: s.req.Spec.ZoneRef.Name}
	if err := r.Client.Get(ctx, key, zone); err != nil {
		if apierrors.IsNotFound(err) {
			return flow.Stalled(ReasonZoneNotFound, "ProtectionZone %s not found in namespace %s; create it or fix spec.zoneRef", key.Name, key.Namespace)
		}
		return flow.Transient(ReasonRequestFailed, fmt.Errorf("reading ProtectionZone %s: %w", key, err))
	}
	if zone.Spec.StorageBackend != srv1alpha1.BackendDRBD {
		return flow.Stalled(ReasonUnsupportedBackend, "ProtectionZone %s uses storage backend %s; ProtectionRequests need the DRBD backend", zone.Name, zone.Spec.StorageBackend)
	}
	s.zone = zone
	var drs []string
	for _, c := range zone.Spec.Clusters {
		switch c.Role {
		case srv1alpha1.ClusterRolePrimary:
			s.primaryCluster = c.Name
		case srv1alpha1.ClusterRoleDR:
			drs = append(drs, c.Name)
			if c.Name == s.req.Spec.TargetCluster {
				s.target = c.Name
			}
		}
	}
	switch {
	case s.req.Spec.TargetCluster == "" && len(drs) == 1:
		s.target = drs[0]
	case s.req.Spec.TargetCluster == "":
		return flow.Stalled(ReasonInvalidSpec, "zone %s has %d DR clusters %v; set spec.targetCluster to one of them", zone.Name, len(drs), drs)
	case s.target == "":
		return flow.Stalled(ReasonInvalidSpec, "spec.targetCluster %q is not a DR cluster of zone %s (DR clusters: %v)", s.req.Spec.TargetCluster, zone.Name, drs)
	}
	if s.primaryCluster == "" {
		return flow.Stalled(ReasonInvalidSpec, "zone %s has no Primary cluster", zone.Name)
	}
	var errs []error
	var err error
	if s.primary, err = r.Remote.Get(remote.Key{Namespace: s.req.Namespace, Zone: zone.Name, Cluster: s.primaryCluster}); err != nil {
		errs = append(errs, err)
	}
	if s.dr, err = r.Remote.Get(remote.Key{Namespace: s.req.Namespace, Zone: zone.Name, Cluster: s.target}); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		s.primary, s.dr = nil, nil
		return flow.Waiting(ReasonClusterUnreachable, unreachableRetry, "waiting for the workload clusters: %v", errors.Join(errs...))
	}
	return nil
}

// remoteErr wraps an error of a workload API call as a transient error naming
// the cluster and what was attempted.
func remoteErr(cluster, what string, err error) error {
	return flow.Transient(ReasonRequestFailed, fmt.Errorf("%s on cluster %s: %w", what, cluster, err))
}

func asReconcileError(err error, target **flow.Error) bool { return errors.As(err, target) }
