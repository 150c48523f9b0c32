package drpc

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// FieldOwner is the server-side apply field manager of this controller: it owns
// the VRGs' spec and labels it writes, and ProtectionGroup.spec.desiredState of
// the workload copies of the groups its DRPCs move.
const FieldOwner = "siterecovery-drpc"

// desiredVRG is the VRG spec for a cluster in a replication state.
func (s *scope) desiredVRG(cluster string, state drv1alpha1.ReplicationState) drv1alpha1.VolumeReplicationGroupSpec {
	p := s.policy
	return drv1alpha1.VolumeReplicationGroupSpec{
		PVCSelector:      s.drpc.Spec.PVCSelector,
		ReplicationState: state,
		Action:           s.drpc.Spec.Action,
		Async: &drv1alpha1.VRGAsyncSpec{
			SchedulingInterval:          p.Spec.SchedulingInterval,
			ReplicationClassSelector:    p.Spec.ReplicationClassSelector,
			VolumeSnapshotClassSelector: p.Spec.VolumeSnapshotClassSelector,
			PeerClasses:                 p.Status.PeerClasses,
		},
		ProtectionGroupRef: s.group.Name,
		VolSync:            s.volSyncSpec(cluster, state),
	}
}

// vrgLabels are the labels this controller puts on every VRG: ownership, zone
// and, once the DRPC has it, the global-vgr label.
func (s *scope) vrgLabels() map[string]string {
	l := map[string]string{
		srv1alpha1.ManagedByLabel:       srv1alpha1.ManagedByValue,
		srv1alpha1.ZoneLabel:            s.zone,
		srv1alpha1.ProtectionGroupLabel: s.group.Name,
		srv1alpha1.DRNamespaceLabel:     s.drpc.Namespace,
	}
	if g := s.globalVGR(); g != "" {
		l[drv1alpha1.GlobalVGRLabel] = g
	}
	return l
}

// ensureVRG creates or updates the VRG on a cluster when it differs from what
// the DRPC wants; an unchanged VRG is not written.
func (r *Reconciler) ensureVRG(ctx context.Context, s *scope, cluster string, state drv1alpha1.ReplicationState) error {
	rc := s.remotes[cluster]
	if rc == nil {
		return flow.Waiting(srv1alpha1.ReasonClusterUnreachable, unreachableRetry, "cluster %s: %v", cluster, s.unreachable[cluster])
	}
	spec, labels, annotations := s.desiredVRG(cluster, state), s.vrgLabels(), s.vrgAnnotations()
	if cur := s.vrgs[cluster]; cur != nil && equality.Semantic.DeepEqual(cur.Spec, spec) && hasLabels(cur.Labels, labels) &&
		(!s.volSync() || sameAnnotations(cur.Annotations, annotations)) {
		return nil
	}
	u, err := vrgApplyConfiguration(s.drpc.Name, s.vrgNamespace, labels, annotations, &spec)
	if err != nil {
		return err
	}
	if err := rc.Direct.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: applying VolumeReplicationGroup %s/%s: %w", cluster, s.vrgNamespace, s.drpc.Name, err))
	}
	applied := &drv1alpha1.VolumeReplicationGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, applied); err == nil {
		s.vrgs[cluster] = applied
	}
	return nil
}

// vrgApplyConfiguration is the apply configuration of a VRG: its labels, the
// annotations the DRPC carries over, and its whole spec, never its status.
func vrgApplyConfiguration(name, namespace string, labels, annotations map[string]string, spec *drv1alpha1.VolumeReplicationGroupSpec) (*unstructured.Unstructured, error) {
	us, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		return nil, err
	}
	l := map[string]any{}
	for k, v := range labels {
		l[k] = v
	}
	md := map[string]any{"namespace": namespace, "name": name, "labels": l}
	if len(annotations) > 0 {
		a := map[string]any{}
		for k, v := range annotations {
			a[k] = v
		}
		md["annotations"] = a
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": md, "spec": us}}
	u.SetGroupVersionKind(drv1alpha1.GroupVersion.WithKind("VolumeReplicationGroup"))
	return u, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// vrgReached reports whether a VRG has observed its current spec and reports
// state; a Primary must also report DataReady.
func vrgReached(v *drv1alpha1.VolumeReplicationGroup, state drv1alpha1.State) bool {
	if v == nil || v.Status.State != state || v.Status.ObservedGeneration != v.Generation {
		return false
	}
	return state != drv1alpha1.PrimaryState || meta.IsStatusConditionTrue(v.Status.Conditions, drv1alpha1.ConditionDataReady)
}

// vrgState describes a VRG for a waiting message.
func vrgState(v *drv1alpha1.VolumeReplicationGroup) string {
	if v == nil {
		return "absent"
	}
	return fmt.Sprintf("spec %s, status %q (observed generation %d of %d)", v.Spec.ReplicationState, v.Status.State, v.Status.ObservedGeneration, v.Generation)
}

// deleteVRG deletes the VRG on a cluster; done reports whether it is gone or
// being deleted (the workload-side VRG controller finishes the cleanup).
func (r *Reconciler) deleteVRG(ctx context.Context, s *scope, cluster string) (done bool, err error) {
	rc := s.remotes[cluster]
	if rc == nil {
		return false, nil
	}
	v := s.vrgs[cluster]
	if v == nil {
		return true, nil
	}
	if !v.DeletionTimestamp.IsZero() {
		return true, nil
	}
	obj := &drv1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: v.Namespace, Name: v.Name}}
	if err := rc.Direct.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		return false, flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: deleting VolumeReplicationGroup %s/%s: %w", cluster, v.Namespace, v.Name, err))
	}
	return true, nil
}
