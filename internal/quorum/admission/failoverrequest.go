package admission

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// failoverRequests validates FailoverRequests against their group and zone.
// The confirmation and the disaster-operator right of an unplanned or forced
// request are checked by the API server itself, with the protectionzone
// chart's ValidatingAdmissionPolicy, so that they hold where no webhook runs.
//
// The group and zone come from the cache; the unfinished requests it warns of
// are listed uncached, because a request created a moment before is exactly
// the one a user must hear of, and creates are rare.
type failoverRequests struct {
	client   client.Reader
	requests client.Reader
}

var _ admission.Validator[*srv1alpha1.FailoverRequest] = &failoverRequests{}

// ValidateCreate refuses a request that cannot or must not run, and warns of
// an unfinished request of the same group, behind which this one queues.
func (v *failoverRequests) ValidateCreate(ctx context.Context, fr *srv1alpha1.FailoverRequest) (admission.Warnings, error) {
	g, z, err := groupAndZone(ctx, v.client, fr.Namespace, fr.Spec.ProtectionGroupRef)
	if err != nil {
		return nil, err
	}
	target := fr.Spec.TargetCluster
	targets := targetsOf(z, g.Spec.ActiveCluster)
	if !contains(clustersOf(z), target) {
		return nil, fmt.Errorf("targetCluster %q is not a cluster of zone %s; valid targets for group %s: %s", target, z.Name, g.Name, strings.Join(targets, ", "))
	}
	unplanned := fr.Spec.FailoverType == srv1alpha1.FailoverUnplanned
	if !unplanned && target == g.Spec.ActiveCluster {
		return nil, fmt.Errorf("group %s already runs on %s; a planned failover needs another target: %s", g.Name, target, strings.Join(targets, ", "))
	}
	return v.queued(ctx, fr, g.Name)
}

// queued warns of the unfinished requests of the same group.
func (v *failoverRequests) queued(ctx context.Context, fr *srv1alpha1.FailoverRequest, group string) (admission.Warnings, error) {
	list := &srv1alpha1.FailoverRequestList{}
	if err := v.requests.List(ctx, list, client.InNamespace(fr.Namespace)); err != nil {
		return nil, err
	}
	var warnings admission.Warnings
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == fr.Name || o.Spec.ProtectionGroupRef.Name != group || finished(o.Status.Phase) {
			continue
		}
		warnings = append(warnings, fmt.Sprintf("FailoverRequest %s of group %s has not finished (phase %s); this request waits in Pending until it does, and completes as AlreadyOnTarget if the group is on %s by then",
			o.Name, group, phaseOrPending(o.Status.Phase), fr.Spec.TargetCluster))
	}
	return warnings, nil
}

// ValidateUpdate accepts every update: the schema keeps the spec immutable.
func (v *failoverRequests) ValidateUpdate(context.Context, *srv1alpha1.FailoverRequest, *srv1alpha1.FailoverRequest) (admission.Warnings, error) {
	return nil, nil
}

// ValidateDelete refuses deleting a request while its DRBD roles change, and
// says what deleting it does otherwise.
func (v *failoverRequests) ValidateDelete(_ context.Context, fr *srv1alpha1.FailoverRequest) (admission.Warnings, error) {
	if why := srv1alpha1.FailoverDeletionRefusal(fr.Status.Phase); why != "" {
		return nil, fmt.Errorf("FailoverRequest %s cannot be deleted now: %s", fr.Name, why)
	}
	if effect := srv1alpha1.FailoverDeletionEffect(fr.Status.Phase); effect != "" {
		return admission.Warnings{fmt.Sprintf("deleting FailoverRequest %s in phase %s: %s", fr.Name, phaseOrPending(fr.Status.Phase), effect)}, nil
	}
	return nil, nil
}

func finished(p srv1alpha1.FailoverPhase) bool {
	return p == srv1alpha1.FailoverCompleted || p == srv1alpha1.FailoverFailed
}

func phaseOrPending[P ~string](p P) string {
	if p == "" {
		return "Pending"
	}
	return string(p)
}
