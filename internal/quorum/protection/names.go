package protection

import (
	"fmt"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Labels and annotations the controller puts on what it creates.
const (
	// Finalizer keeps a ProtectionRequest until removing protection has put the VM
	// back on its own PVCs and deleted everything the request created.
	Finalizer = "siterecovery.trilio.io/protection"
	// FieldOwner is the field manager of the controller's patches.
	FieldOwner = "siterecovery-protection"

	// OriginalVolumesAnnotation keeps, on the VM, the volumes the frontend switch
	// replaced (JSON map disk -> {"kind":"PersistentVolumeClaim"|"DataVolume","name":...}),
	// so that removing protection can put the VM back on its original PVCs.
	OriginalVolumesAnnotation = "siterecovery.trilio.io/original-volumes"

	// OriginalDataVolumeTemplatesAnnotation keeps, on the VM, its
	// spec.dataVolumeTemplates (JSON list) when the frontend switch dropped
	// those no DataVolume volume names any more, so that removing protection
	// puts them back.
	OriginalDataVolumeTemplatesAnnotation = "siterecovery.trilio.io/original-datavolume-templates"

	// MinorBase is the first DRBD minor the controller allocates; lower minors are
	// left to resources made by hand.
	MinorBase = 1000

	// NodeIDPrimary and NodeIDDR are the DRBD node ids of the two replicas.
	NodeIDPrimary = 0
	NodeIDDR      = 1

	// DefaultHolderImage is the replica holder's container image.
	DefaultHolderImage = "registry.k8s.io/pause:3.10"
)

// HolderName is the replica holder pod of a VM on both sides.
func HolderName(vm string) string { return "vm-" + vm + "-replica" }

// FrontendPVCName is the DRBD-backed PVC the VM's disk names after protection.
func FrontendPVCName(sourcePVC string) string { return sourcePVC + "-drbd" }

// MetaPVCName is the PVC, on both clusters, that holds the DRBD metadata of a
// disk whose data lives on sourcePVC.
func MetaPVCName(sourcePVC string) string { return sourcePVC + "-drbdmeta" }

// FrontendPVName is the cluster-scoped local PV of a frontend PVC.
func FrontendPVName(namespace, sourcePVC string) string {
	return fmt.Sprintf("srdrbd-%s-%s", namespace, sourcePVC)
}

// DevicePath is the DRBD device of a minor.
func DevicePath(minor int32) string { return fmt.Sprintf("/dev/drbd%d", minor) }

// labels are the labels of every object made for req; role may be empty.
func labels(req *srv1alpha1.ProtectionRequest, role string) map[string]string {
	l := map[string]string{
		srv1alpha1.ManagedByLabel:         srv1alpha1.ManagedByValue,
		srv1alpha1.ZoneLabel:              req.Spec.ZoneRef.Name,
		srv1alpha1.ProtectionRequestLabel: req.Name,
		srv1alpha1.DRNamespaceLabel:       req.Namespace,
		// The failover-controller and the replication-monitor find a group's
		// DRBDResources by this label.
		srv1alpha1.ProtectionGroupLabel: req.Spec.ProtectionGroupRef.Name,
	}
	if role != "" {
		l[srv1alpha1.ObjectRoleLabel] = role
	}
	return l
}
