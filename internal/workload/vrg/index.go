package vrg

import (
	"context"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Field indexes of the manager's cache.
const (
	// globalVGRIndex indexes VRGs cluster-wide by their global-vgr label, so that
	// consensus and the VGR watcher find a group's VRGs without listing them all.
	globalVGRIndex = "metadata.labels.global-vgr"
	// claimIndex indexes pods and VMIs by "<namespace>/<claim>" of each PVC they mount.
	claimIndex = "spec.volumes.claimName"
	// groupNameIndex indexes ProtectionGroup copies by name and VRGs by
	// spec.protectionGroupRef, to join the two across namespaces.
	groupNameIndex = "protectionGroup.name"
)

func indexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &drv1alpha1.VolumeReplicationGroup{}, globalVGRIndex, func(obj client.Object) []string {
		if v := obj.GetLabels()[drv1alpha1.GlobalVGRLabel]; v != "" {
			return []string{v}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &corev1.Pod{}, claimIndex, func(obj client.Object) []string {
		return podClaims(obj.(*corev1.Pod))
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &srv1alpha1.ProtectionGroup{}, groupNameIndex, func(obj client.Object) []string {
		return []string{obj.GetName()}
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &drv1alpha1.VolumeReplicationGroup{}, groupNameIndex, func(obj client.Object) []string {
		if g := obj.(*drv1alpha1.VolumeReplicationGroup).Spec.ProtectionGroupRef; g != "" {
			return []string{g}
		}
		return nil
	}); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &kubevirtv1.VirtualMachineInstance{}, claimIndex, func(obj client.Object) []string {
		return vmiClaims(obj.(*kubevirtv1.VirtualMachineInstance))
	})
}

// vrgsOfGroup maps a ProtectionGroup copy to the VRGs of its group: a Relocate
// waits for the group to stop on this cluster.
func (r *Reconciler) vrgsOfGroup(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &drv1alpha1.VolumeReplicationGroupList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{groupNameIndex: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing VolumeReplicationGroups of ProtectionGroup", "group", obj.GetName())
		return nil
	}
	return requests(list.Items, nil)
}

func podClaims(pod *corev1.Pod) []string {
	var keys []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			keys = append(keys, pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		}
	}
	return keys
}

// vmiClaims covers PVC and DataVolume disks; a DataVolume's PVC has its name.
func vmiClaims(vmi *kubevirtv1.VirtualMachineInstance) []string {
	var keys []string
	for _, v := range vmi.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			keys = append(keys, vmi.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		case v.DataVolume != nil:
			keys = append(keys, vmi.Namespace+"/"+v.DataVolume.Name)
		}
	}
	return keys
}

// groupMembers lists the VRGs of this cluster with the given global-vgr label.
func (r *Reconciler) groupMembers(ctx context.Context, name string) ([]drv1alpha1.VolumeReplicationGroup, error) {
	list := &drv1alpha1.VolumeReplicationGroupList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{globalVGRIndex: name}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

func requests(vrgs []drv1alpha1.VolumeReplicationGroup, skip client.Object) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(vrgs))
	for i := range vrgs {
		if skip != nil && vrgs[i].Namespace == skip.GetNamespace() && vrgs[i].Name == skip.GetName() {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&vrgs[i])})
	}
	return reqs
}

// peersOf maps a VRG to the other VRGs of its global group, so that a peer's change
// of state, GlobalSecondary condition or deletion reaches them at once.
func (r *Reconciler) peersOf(ctx context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[drv1alpha1.GlobalVGRLabel]
	if name == "" {
		return nil
	}
	vrgs, err := r.groupMembers(ctx, name)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing peer VRGs", "globalVGR", name)
		return nil
	}
	return requests(vrgs, obj)
}

// vrgsOfVGR is the VGR watcher: a change of a VGR in the operator
// namespace enqueues every VRG labelled with its name.
func (r *Reconciler) vrgsOfVGR(ctx context.Context, obj client.Object) []reconcile.Request {
	if _, ok := obj.(*replicationv1alpha1.VolumeGroupReplication); !ok || obj.GetNamespace() != r.Options.OperatorNamespace {
		return nil
	}
	vrgs, err := r.groupMembers(ctx, obj.GetName())
	if err != nil {
		log.FromContext(ctx).Error(err, "listing VRGs of a global VGR", "vgr", obj.GetName())
		return nil
	}
	return requests(vrgs, nil)
}

// vrgsInNamespace maps a PVC, pod or VMI to the VRGs of its namespace.
func (r *Reconciler) vrgsInNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &drv1alpha1.VolumeReplicationGroupList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "listing VRGs", "namespace", obj.GetNamespace())
		return nil
	}
	return requests(list.Items, nil)
}

// mountsPVC keeps pod and VMI events that can change whether a PVC is in use.
func mountsPVC(obj client.Object) bool {
	switch o := obj.(type) {
	case *corev1.Pod:
		return len(podClaims(o)) > 0
	case *kubevirtv1.VirtualMachineInstance:
		return len(vmiClaims(o)) > 0
	}
	return false
}
