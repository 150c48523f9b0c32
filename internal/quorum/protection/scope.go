package protection

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	requeueAfter   time.Duration
	// trail is the request's audit trail: its phase, history, conditions, and
	// the events recorded once the status is written.
	trail *flow.Trail[srv1alpha1.ProtectionPhase]

	// stayOn is, while protection is removed, the cluster the VM stays on.
	stayOn string
}

// phases are the terminal phases of a ProtectionRequest.
var phases = flow.Terminals[srv1alpha1.ProtectionPhase]{Succeeded: srv1alpha1.ProtectionProtected, Failed: srv1alpha1.ProtectionFailed}

// maxMessage bounds the messages of conditions and of the phase history.
const maxMessage = 1024

func newScope(req *srv1alpha1.ProtectionRequest, now time.Time) *scope {
	st := &req.Status
	return &scope{req: req, before: req.DeepCopy(), now: now, trail: &flow.Trail[srv1alpha1.ProtectionPhase]{
		Phase: &st.Phase, History: &st.PhaseHistory, Conditions: &st.Conditions,
		CompletionTime: &st.CompletionTime, Generation: req.Generation, Now: now, Terminals: phases,
		MaxMessage: maxMessage,
	}}
}

// requeue asks for a wake-up after d at the latest.
func (s *scope) requeue(d time.Duration) {
	if d > 0 && (s.requeueAfter == 0 || d < s.requeueAfter) {
		s.requeueAfter = d
	}
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
			return flow.Stalled(srv1alpha1.ReasonZoneNotFound, "ProtectionZone %s not found in namespace %s; create it or fix spec.zoneRef", key.Name, key.Namespace)
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
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "waiting for the workload clusters: %v", errors.Join(errs...))
	}
	return nil
}

func asReconcileError(err error, target **flow.Error) bool { return errors.As(err, target) }
