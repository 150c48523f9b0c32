package testfailover

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// disk is one replicated disk of a group VM as found on the DR cluster.
type disk struct {
	vm, namespace, volume string
	// claim is the PVC the standby VM's volume names.
	claim string
	// source is the PVC that is snapshotted (see resolveSource).
	source *corev1.PersistentVolumeClaim
}

// Annotations on the production-side snapshots: together with the labels they are
// the record of what the test snapshotted, read by the later phases.
const (
	annotationVM        = "siterecovery.trilio.io/test-vm-name"
	annotationVolume    = "siterecovery.trilio.io/test-volume"
	annotationClaim     = "siterecovery.trilio.io/test-claim"
	frontendRoleValue   = srv1alpha1.ObjectRoleFrontend
	backingRoleValue    = srv1alpha1.ObjectRoleBacking
	frontendClaimSuffix = "-drbd"
)

// disks lists the disks of every group VM from its Halted standby on the DR
// cluster: the volumes that name a PVC (or a DataVolume, whose PVC has its name).
func (r *Reconciler) disks(ctx context.Context, s *scope, rc *remote.Remote) ([]disk, error) {
	cluster := s.tf.Spec.TargetCluster
	var out []disk
	for _, ref := range s.group.Spec.VirtualMachines {
		vm := &kubevirtv1.VirtualMachine{}
		if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, vm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, invalid(ReasonStandbyMissing, "standby VM %s/%s not found on %s: is the group in sync?", ref.Namespace, ref.Name, cluster)
			}
			return nil, remoteErr(cluster, "reading standby VM "+ref.Name, err)
		}
		if vm.Spec.Template == nil {
			continue
		}
		for _, v := range vm.Spec.Template.Spec.Volumes {
			claim := claimOf(v)
			if claim == "" {
				continue
			}
			src, err := r.resolveSource(ctx, rc, cluster, ref.Namespace, claim)
			if err != nil {
				return nil, err
			}
			out = append(out, disk{vm: ref.Name, namespace: ref.Namespace, volume: v.Name, claim: claim, source: src})
		}
	}
	if len(out) == 0 {
		return nil, invalid(ReasonNoDisks, "no VM of group %s has a PVC-backed disk on %s; nothing to snapshot", s.group.Name, cluster)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].vm+"/"+out[i].volume < out[j].vm+"/"+out[j].volume })
	return out, nil
}

func claimOf(v kubevirtv1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.DataVolume != nil:
		return v.DataVolume.Name
	}
	return ""
}

// resolveSource is the PVC to snapshot for a claim the standby VM names.
//
// A VM protected by the DRBD backend names its frontend PVC "<pvc>-drbd", a local
// PV on /dev/drbd<minor> that no CSI driver can snapshot. The replicated data sits
// on the DR backing PVC "<pvc>" (role "backing"), the CSI volume DRBD uses as its
// lower device on the DR side; that is what is snapshotted. A claim that is not a
// DRBD frontend (another backend replicates the PVC itself) is snapshotted as is.
func (r *Reconciler) resolveSource(ctx context.Context, rc *remote.Remote, cluster, namespace, claim string) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: namespace, Name: claim}, pvc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, invalid(ReasonNoDisks, "PVC %s/%s of the standby VM not found on %s", namespace, claim, cluster)
		}
		return nil, remoteErr(cluster, "reading PVC "+claim, err)
	}
	if pvc.Labels[srv1alpha1.ObjectRoleLabel] != frontendRoleValue {
		return pvc, nil
	}
	name := strings.TrimSuffix(claim, frontendClaimSuffix)
	backing := &corev1.PersistentVolumeClaim{}
	if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, backing); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, invalid(ReasonNoDisks, "DRBD frontend PVC %s/%s has no backing PVC %s on %s", namespace, claim, name, cluster)
		}
		return nil, remoteErr(cluster, "reading PVC "+name, err)
	}
	if backing.Labels[srv1alpha1.ObjectRoleLabel] != backingRoleValue {
		return nil, invalid(ReasonNoDisks, "PVC %s/%s is not the DRBD backing PVC of %s (label %s=%q)", namespace, name, claim, srv1alpha1.ObjectRoleLabel, backing.Labels[srv1alpha1.ObjectRoleLabel])
	}
	return backing, nil
}

func (d disk) String() string { return fmt.Sprintf("%s/%s (%s)", d.vm, d.volume, d.source.Name) }
