package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// drNamespaceSpec is a DR namespace of the sandbox and its zone over the two
// workload clusters, run by a quorum-manager of its own: dr-demo (DRBD), the
// VolSync zone (-volsync) and the Offloaded zone (-offloaded) differ only in
// these fields.
type drNamespaceSpec struct {
	namespace, zone          string
	displayName, description string
	backend                  srv1alpha1.StorageBackend
	// storageClass is mapped to itself on the other cluster.
	storageClass string
	// policy, when set, names the DRPolicy over both clusters, every interval;
	// its snapshot classes are those labelled snapshotClasses.
	policy, interval string
	snapshotClasses  map[string]string
	// workload are the objects each workload cluster needs besides what the
	// workload chart installs: the application namespace and the storage's
	// classes.
	workload func(cluster string) []client.Object
}

// seedWorkload creates what an operator has on the workload clusters before
// protecting anything there (spec.workload) and the DR namespace's DRPolicy.
// What the charts made already (a namespace) is left as it is.
func (sb *sandbox) seedWorkload(ctx context.Context, spec drNamespaceSpec) error {
	objs := map[string][]client.Object{}
	for _, cluster := range []string{primary, dr} {
		objs[cluster] = spec.workload(cluster)
	}
	if spec.policy != "" {
		objs["quorum"] = []client.Object{&drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: spec.namespace, Name: spec.policy},
			Spec: drv1alpha1.DRPolicySpec{DRClusters: []string{primary, dr}, SchedulingInterval: spec.interval,
				VolumeSnapshotClassSelector: metav1.LabelSelector{MatchLabels: spec.snapshotClasses}}}}
	}
	for _, cluster := range []string{"quorum", primary, dr} {
		c := sb.zone.Clusters[cluster].Client
		for _, obj := range objs[cluster] {
			if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating %T %s on %s: %w", obj, obj.GetName(), cluster, err)
			}
		}
	}
	return nil
}

// describeZone gives a zone bootstrap-zone.sh applied its display name and
// description, as an operator would edit them.
func (sb *sandbox) describeZone(ctx context.Context, spec drNamespaceSpec) error {
	q := sb.zone.Clusters["quorum"].Client
	z := &srv1alpha1.ProtectionZone{}
	if err := q.Get(ctx, client.ObjectKey{Namespace: spec.namespace, Name: spec.zone}, z); err != nil {
		return err
	}
	before := z.DeepCopy()
	z.Spec.DisplayName, z.Spec.Description = spec.displayName, spec.description
	return q.Patch(ctx, z, client.MergeFrom(before))
}

// protectableNamespace is the one application namespace whose VMs each DR
// namespace of the sandbox protects: its quorum chart's
// protection.allowedNamespaces and the workload chart's
// quorumAccess.applicationNamespaces.
func protectableNamespace(drNS string) string {
	return map[string]string{drNamespace: appNS, vsNamespace: vsAppNS, ofNamespace: ofAppNS}[drNS]
}

// getDRPC reads a DRPC on the quorum cluster.
func (sb *sandbox) getDRPC(ctx context.Context, namespace, name string) (*drv1alpha1.DRPlacementControl, error) {
	d := &drv1alpha1.DRPlacementControl{}
	return d, sb.zone.Clusters["quorum"].Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d)
}

// patchDRPC changes a DRPC, as a user asking for an action does.
func (sb *sandbox) patchDRPC(ctx context.Context, namespace, name string, mutate func(*drv1alpha1.DRPlacementControl)) error {
	d, err := sb.getDRPC(ctx, namespace, name)
	if err != nil {
		return err
	}
	before := d.DeepCopy()
	mutate(d)
	return sb.zone.Clusters["quorum"].Client.Patch(ctx, d, client.MergeFrom(before))
}

// waitDRPCPhase waits until a DRPC reached phase on cluster and finished it.
func (sb *sandbox) waitDRPCPhase(ctx context.Context, namespace, name string, phase drv1alpha1.DRState, cluster string) error {
	var why string
	err := poll(ctx, 5*time.Minute, func() (bool, error) {
		d, err := sb.getDRPC(ctx, namespace, name)
		if err != nil {
			return false, err
		}
		st := d.Status
		why = fmt.Sprintf("phase %s progression %s on %q", st.Phase, st.Progression, st.PreferredDecision.ClusterName)
		return st.Phase == phase && st.PreferredDecision.ClusterName == cluster && st.ObservedGeneration == d.Generation &&
			(st.Progression == drv1alpha1.ProgressionCompleted || st.Progression == drv1alpha1.ProgressionCleaningUp), nil
	})
	if err != nil {
		return fmt.Errorf("%s %s on %s (%s): %w", name, phase, cluster, why, err)
	}
	return nil
}
