package env

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// DRBDReplica is one side of a VM's DRBD resource pair, as the protection flow
// creates it: named "vm-<vm>" in AppNS, labelled with its group, the DR
// namespace that owns it (a group of the same name in another namespace must
// not claim it) and its protection request ("protect-<vm>"), one volume on the
// backing claim "<vm>-disk", Secondary, the peer on the other workload cluster
// on the same port, each on its cluster's node of Nodes. CreateReplica
// creates it with its backing claim.
func DRBDReplica(group, vm, local, peer string, nodeID, port int32) *srv1alpha1.DRBDResource {
	return DRBDReplicaOn(group, vm, local, peer, Nodes[local], Nodes[peer], nodeID, port)
}

// DRBDReplicaOn is DRBDReplica on the node on of cluster local, its peer on
// the node peerOn of cluster peer: for a zone whose replicas are spread over
// a cluster's WorkerNodes.
func DRBDReplicaOn(group, vm, local, peer string, on, peerOn Node, nodeID, port int32) *srv1alpha1.DRBDResource {
	return &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: AppNS, Name: srv1alpha1.DRBDResourceName(vm),
			Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: group, srv1alpha1.DRNamespaceLabel: Namespace,
				srv1alpha1.ProtectionRequestLabel: "protect-" + vm}},
		Spec: srv1alpha1.DRBDResourceSpec{
			NodeName: on.Name, NodeID: nodeID, Port: port, Protocol: srv1alpha1.ProtocolA,
			Role: srv1alpha1.RoleSecondary,
			Volumes: []srv1alpha1.DRBDVolume{{Number: 0, Minor: 1000 + port - 7000,
				BackingPVC: &srv1alpha1.LocalObjectReference{Name: vm + "-disk"}}},
			Peers: []srv1alpha1.DRBDPeer{{NodeName: peerOn.Name, NodeID: 1 - nodeID,
				Address: peerOn.Address, Port: port, Cluster: peer}},
		},
	}
}

// CreateReplica creates r on a workload cluster after its backing claims: the
// drbd-node-agent opens only a bound block claim labelled with r's DR
// namespace and protection request. A claim that does not exist is created
// bound (on a full control plane to a PV of its own, which a bare API server
// needs not; the zone's agents resolve devices with SimDevices); one that exists (a storage simulator's) gets r's request
// labels, and r waits until it is bound.
func (e *Env) CreateReplica(t testing.TB, cluster string, r *srv1alpha1.DRBDResource) {
	t.Helper()
	ctx, c := context.Background(), e.Client(cluster)
	request := map[string]string{}
	for _, l := range []string{srv1alpha1.DRNamespaceLabel, srv1alpha1.ProtectionRequestLabel} {
		request[l] = r.Labels[l]
	}
	for _, v := range r.Spec.Volumes {
		for _, ref := range []*srv1alpha1.LocalObjectReference{v.BackingPVC, v.MetaPVC} {
			if ref != nil {
				ensureBackingClaim(t, c, r.Namespace, ref.Name, request, e.controlPlane)
			}
		}
	}
	require.NoError(t, c.Create(ctx, r))
}

// ensureBackingClaim creates the bound block claim name with labels (and,
// with withVolume, its PV), or adds labels to the existing one and waits
// until it is bound.
func ensureBackingClaim(t testing.TB, c client.Client, namespace, name string, labels map[string]string, withVolume bool) {
	t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc); {
	case apierrors.IsNotFound(err):
		pvc = &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
				StorageClassName: ptr.To(""), VolumeName: "backing-" + namespace + "-" + name,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if withVolume {
			// The volume the claim is bound to, pre-bound to it as a static
			// provisioner leaves it: kube-controller-manager's PV binder
			// turns a bound claim whose volume does not exist Lost
			// (pkg/controller/volume/persistentvolume/pv_controller.go,
			// syncBoundClaim). A claim created again finds its volume
			// still there (Retain).
			if err := c.Create(ctx, backingVolume(pvc)); !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
		}
		require.NoError(t, c.Create(ctx, pvc))
		if !withVolume {
			pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: pvc.Spec.AccessModes, Capacity: pvc.Spec.Resources.Requests}
			require.NoError(t, c.Status().Update(ctx, pvc))
			return
		}
		// The PV binder binds it.
	case err != nil:
		require.NoError(t, err)
	default:
		before := pvc.DeepCopy()
		if pvc.Labels == nil {
			pvc.Labels = map[string]string{}
		}
		maps.Copy(pvc.Labels, labels)
		require.NoError(t, c.Patch(ctx, pvc, client.MergeFrom(before)))
	}
	Eventually(t, time.Minute, fmt.Sprintf("PVC %s/%s bound", namespace, name), func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("phase %q", pvc.Status.Phase)
		}
		return nil
	})
}

// backingVolume is the block PV pvc names, bound to it; the zone's agents
// resolve devices with SimDevices, so its source is never opened.
func backingVolume(pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvc.Spec.VolumeName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    pvc.Spec.Resources.Requests,
			AccessModes: pvc.Spec.AccessModes, VolumeMode: pvc.Spec.VolumeMode,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: storagesim.Driver, VolumeHandle: pvc.Spec.VolumeName}},
		},
	}
}

// SimDevices stands for the kubelet's volumeDevices folder on the zone's
// simulated nodes: a claim the agent accepted is the device /dev/vg0/<claim>
// (the DRBD simulator needs no file behind a disk).
type SimDevices struct{}

// DevicePath implements nodeagent.DeviceResolver.
func (SimDevices) DevicePath(_ context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	return "/dev/vg0/" + pvc.Name, nil
}

// WorkloadGroup is a workload cluster's copy of a group, as pg-sync writes it.
func WorkloadGroup(name string, refs []srv1alpha1.VirtualMachineReference, state srv1alpha1.GroupState) *srv1alpha1.ProtectionGroup {
	return &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec:       srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, DesiredState: state},
	}
}
