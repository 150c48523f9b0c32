package drpolicy

import (
	"cmp"
	"slices"

	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	storagev1 "k8s.io/api/storage/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

// clusterClasses are the classes discovery reads on one cluster.
type clusterClasses struct {
	name           string
	storageClasses []storagev1.StorageClass
	groupClasses   []replicationv1alpha1.VolumeGroupReplicationClass
}

// offloadedClass is an offloaded StorageClass with its StorageID.
type offloadedClass struct {
	sc        *storagev1.StorageClass
	storageID string
}

// discover computes the peer classes of two clusters, in drClusters order:
// a StorageClass of the same name that is offloaded with a StorageID on both
// sides, linked on each side by StorageID to a VolumeGroupReplicationClass, the
// two VolumeGroupReplicationClasses sharing one GroupReplicationID. The peer class
// is global only when both of those VolumeGroupReplicationClasses carry
// ramendr.openshift.io/global=true. The result is sorted by StorageClass name and
// GroupReplicationID so that an unchanged inventory gives an unchanged status.
func discover(a, b clusterClasses) []drv1alpha1.PeerClass {
	left, right := offloaded(a), offloaded(b)
	var out []drv1alpha1.PeerClass
	for name, l := range left {
		r, ok := right[name]
		if !ok {
			continue
		}
		lg, rg := groupClassesByID(a, l), groupClassesByID(b, r)
		for grID, lc := range lg {
			rc, ok := rg[grID]
			if !ok {
				continue
			}
			out = append(out, drv1alpha1.PeerClass{
				ClusterIDs:         []string{a.name, b.name},
				StorageClassName:   name,
				StorageID:          []string{l.storageID, r.storageID},
				GroupReplicationID: grID,
				Grouping:           true,
				Offloaded:          true,
				Global:             isGlobal(lc) && isGlobal(rc),
			})
		}
	}
	slices.SortFunc(out, func(x, y drv1alpha1.PeerClass) int {
		return cmp.Or(cmp.Compare(x.StorageClassName, y.StorageClassName), cmp.Compare(x.GroupReplicationID, y.GroupReplicationID))
	})
	return out
}

// discoverVolSync computes the peer classes of a VolSync zone: a StorageClass
// of the same name on both clusters that is not offloaded. VolSync copies the
// data itself, so the classes name no replication group; the storage IDs are
// kept when both classes carry one.
func discoverVolSync(a, b clusterClasses) []drv1alpha1.PeerClass {
	right := map[string]*storagev1.StorageClass{}
	for i := range b.storageClasses {
		if sc := &b.storageClasses[i]; sc.Labels[drv1alpha1.OffloadedLabel] != "true" {
			right[sc.Name] = sc
		}
	}
	var out []drv1alpha1.PeerClass
	for i := range a.storageClasses {
		l := &a.storageClasses[i]
		r, ok := right[l.Name]
		if !ok || l.Labels[drv1alpha1.OffloadedLabel] == "true" {
			continue
		}
		pc := drv1alpha1.PeerClass{ClusterIDs: []string{a.name, b.name}, StorageClassName: l.Name}
		if li, ri := l.Labels[drv1alpha1.StorageIDLabel], r.Labels[drv1alpha1.StorageIDLabel]; li != "" && ri != "" {
			pc.StorageID = []string{li, ri}
		}
		out = append(out, pc)
	}
	slices.SortFunc(out, func(x, y drv1alpha1.PeerClass) int { return cmp.Compare(x.StorageClassName, y.StorageClassName) })
	return out
}

// offloaded indexes the cluster's offloaded StorageClasses that carry a StorageID.
func offloaded(c clusterClasses) map[string]offloadedClass {
	out := map[string]offloadedClass{}
	for i := range c.storageClasses {
		sc := &c.storageClasses[i]
		id := sc.Labels[drv1alpha1.StorageIDLabel]
		if sc.Labels[drv1alpha1.OffloadedLabel] != "true" || id == "" {
			continue
		}
		out[sc.Name] = offloadedClass{sc: sc, storageID: id}
	}
	return out
}

// groupClassesByID indexes by GroupReplicationID the cluster's
// VolumeGroupReplicationClasses linked to sc: the same StorageID and, when both
// name one, the same provisioner. Of two classes with one ID the first by name
// wins, so that the choice is stable.
func groupClassesByID(c clusterClasses, sc offloadedClass) map[string]*replicationv1alpha1.VolumeGroupReplicationClass {
	classes := slices.Clone(c.groupClasses)
	slices.SortFunc(classes, func(x, y replicationv1alpha1.VolumeGroupReplicationClass) int { return cmp.Compare(x.Name, y.Name) })
	out := map[string]*replicationv1alpha1.VolumeGroupReplicationClass{}
	for i := range classes {
		vc := &classes[i]
		grID := vc.Labels[drv1alpha1.GroupReplicationIDLabel]
		if grID == "" || vc.Labels[drv1alpha1.StorageIDLabel] != sc.storageID {
			continue
		}
		if vc.Spec.Provisioner != "" && sc.sc.Provisioner != "" && vc.Spec.Provisioner != sc.sc.Provisioner {
			continue
		}
		if _, seen := out[grID]; !seen {
			out[grID] = vc
		}
	}
	return out
}

func isGlobal(vc *replicationv1alpha1.VolumeGroupReplicationClass) bool {
	return vc.Labels[drv1alpha1.GlobalLabel] == "true"
}
