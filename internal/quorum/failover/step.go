package failover

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// StepFieldOwner is the field manager of spec.drbd on the workload copies,
// and of spec.desiredState where a failover step asks it with the DRBD role:
// every apply under it carries both (an apply drops the fields its manager
// applied before and leaves out).
const StepFieldOwner = "siterecovery-failover-step"

// groupStep is what one failover step asks of a group's copy on a cluster:
// a run state and a DRBD role in one write. The cluster's pg-controller
// orders the two halves: it demotes only once no VM of the group has a VMI,
// and starts VMs only once every replica is Primary. A step therefore costs
// the quorum tier one write and no round trip between its halves.
type groupStep struct {
	state srv1alpha1.GroupState
	drbd  srv1alpha1.GroupDRBDIntent
}

// stopAndDemote is the source's step of a failover: stop the VMs, then make
// the replicas Secondary (with a secondary's quorum, which fences them).
func stopAndDemote() groupStep {
	return groupStep{state: srv1alpha1.StateStopped, drbd: secondaryIntent()}
}

// promoteAndRun is the target's step of a planned failover, and the last
// step of an unplanned one (whose forced promotion is asked apart, before
// it): promote with a primary's quorum, then start the VMs.
func promoteAndRun() groupStep {
	return groupStep{state: srv1alpha1.StateRunning, drbd: primaryIntent()}
}

// runAgain restores a source whose failover ends before anything was
// promoted on the target: its replicas Primary again, then its VMs running.
func runAgain() groupStep { return promoteAndRun() }

// stoppedAs keeps the group stopped with the given role: the steps of a
// flow that restores the source one half at a time.
func stoppedAs(in srv1alpha1.GroupDRBDIntent) groupStep {
	return groupStep{state: srv1alpha1.StateStopped, drbd: in}
}

func (st groupStep) equal(o groupStep) bool {
	return st.state == o.state && equality.Semantic.DeepEqual(st.drbd, o.drbd)
}

// asksStep reports whether a copy asks st.
func asksStep(pg *srv1alpha1.ProtectionGroup, st groupStep) bool {
	return pg.Spec.DesiredState == st.state && asks(pg, st.drbd)
}

// setStep applies st to the group's copy on a cluster, unless the API
// server's copy asks it already (read through the API server, as
// setDesiredState does, so that a cache behind never skips the write for
// good). A cached copy that does not ask st yet is applied to at once: the
// read would only spare an apply that changes nothing, and it cost each
// step a round trip before its one write. It returns the copy as the API
// server has it, asking st.
func setStep(ctx context.Context, rc *remote.Remote, namespace, group string, st groupStep) (*srv1alpha1.ProtectionGroup, error) {
	key := client.ObjectKey{Namespace: namespace, Name: group}
	pg := &srv1alpha1.ProtectionGroup{}
	if err := rc.Cached.Get(ctx, key, pg, readOnly); err != nil || asksStep(pg, st) {
		pg = &srv1alpha1.ProtectionGroup{}
		if err := rc.Direct.Get(ctx, key, pg); err == nil && asksStep(pg, st) {
			return pg, nil
		}
	}
	pg = &srv1alpha1.ProtectionGroup{}
	u, err := applyStep(ctx, rc, namespace, group, st, "")
	if err != nil {
		return nil, err
	}
	pg.UID, pg.Generation = u.GetUID(), u.GetGeneration()
	return pg, nil
}

// applyStep applies st under StepFieldOwner, the one manager of spec.drbd:
// two managers of it would each keep the subfields the other leaves out (a
// forced promotion's force after the step that ends it). force is applied
// even when false so that it is always this manager's. A resourceVersion
// makes the apply fail rather than overwrite a desiredState changed since
// it was read; an empty desiredState is left out.
func applyStep(ctx context.Context, rc *remote.Remote, namespace, group string, st groupStep, resourceVersion string) (*unstructured.Unstructured, error) {
	intent, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st.drbd)
	if err != nil {
		return nil, err
	}
	intent["force"] = st.drbd.Force
	spec := map[string]any{"drbd": intent}
	if st.state != "" {
		spec["desiredState"] = string(st.state)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(srv1alpha1.GroupVersion.WithKind("ProtectionGroup"))
	u.SetNamespace(namespace)
	u.SetName(group)
	u.SetResourceVersion(resourceVersion)
	if err := rc.Direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(StepFieldOwner), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("asking group %s on %s for desiredState=%s and DRBD role %s: %w", group, rc.Key.Cluster, st.state, st.drbd.Role, err)
	}
	return u, nil
}
