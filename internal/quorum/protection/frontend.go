package protection

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// hostnameLabel is the node label local PVs conventionally select on.
const hostnameLabel = "kubernetes.io/hostname"

// switchFrontend creates the frontend PVs and PVCs on both clusters, then moves
// the VM, which CreatingReplication stopped, onto them and starts it once its
// DRBD replica is Primary (see switchVM). The initial sync then runs under the
// running VM, whose every write goes through DRBD.
func (r *Reconciler) switchFrontend(ctx context.Context, s *scope) (ctrl.Result, error) {
	for _, sd := range s.sides() {
		if err := r.ensureFrontends(ctx, s, sd); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.switchVM(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	setCondition(s.req, ConditionFrontendSwitched, metav1.ConditionTrue, srv1alpha1.ReasonReconciled,
		"VM %s uses the DRBD frontend PVCs", s.vmKey())
	return r.advance(ctx, s, srv1alpha1.ProtectionWaitingForInitialSync)
}

// ensureFrontends creates, on one side, a local Block PV on /dev/drbd<minor>
// pinned to the replica node and a PVC bound to it, per disk.
func (r *Reconciler) ensureFrontends(ctx context.Context, s *scope, sd side) error {
	d := &srv1alpha1.DRBDResource{}
	if err := sd.rc.Direct.Get(ctx, types.NamespacedName{Namespace: s.vmNamespace(), Name: s.req.Status.DRBDResourceName}, d); err != nil {
		return remoteErr(sd.cluster, "reading DRBDResource "+s.req.Status.DRBDResourceName, err)
	}
	hostname := d.Spec.NodeName
	node := &corev1.Node{}
	switch err := sd.rc.Direct.Get(ctx, types.NamespacedName{Name: d.Spec.NodeName}, node); {
	case err == nil && node.Labels[hostnameLabel] != "":
		hostname = node.Labels[hostnameLabel]
	case err != nil && !apierrors.IsNotFound(err):
		return remoteErr(sd.cluster, "reading node "+d.Spec.NodeName, err)
	}
	for _, v := range s.req.Status.Volumes {
		size := *resource.NewQuantity(v.SizeBytes, resource.BinarySI)
		pvName := FrontendPVName(s.vmNamespace(), v.SourcePVC)
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: labels(s.req, "frontend")},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				VolumeMode:  ptr.To(corev1.PersistentVolumeBlock),
				// The device is DRBD's; deleting the PV must never touch it.
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
					Namespace: s.vmNamespace(), Name: v.FrontendPVC},
				PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: DevicePath(v.Minor)}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
				}}}},
			},
		}
		if err := createOwned(ctx, sd.rc, sd.cluster, s, pv); err != nil {
			return err
		}
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.vmNamespace(), Name: v.FrontendPVC, Labels: labels(s.req, "frontend")},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
				StorageClassName: ptr.To(""),
				VolumeName:       pvName,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			},
		}
		if err := createOwned(ctx, sd.rc, sd.cluster, s, pvc); err != nil {
			return err
		}
	}
	return nil
}

// originalVolume is one entry of OriginalVolumesAnnotation.
type originalVolume struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// originalVolumes decodes OriginalVolumesAnnotation.
func originalVolumes(annotations map[string]string) (map[string]originalVolume, error) {
	out := map[string]originalVolume{}
	raw := annotations[OriginalVolumesAnnotation]
	if raw == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("annotation %s is not valid JSON: %w", OriginalVolumesAnnotation, err)
	}
	return out, nil
}

func corev1PVCSource(claim string) corev1.PersistentVolumeClaimVolumeSource {
	return corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}
}
