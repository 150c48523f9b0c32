package protection

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// side is one replica of the DRBD resource.
type side struct {
	cluster string
	rc      *remote.Remote
	nodeID  int32
	role    srv1alpha1.DRBDRole
	primary bool
}

func (s *scope) sides() [2]side {
	return [2]side{
		{cluster: s.primaryCluster, rc: s.primary, nodeID: NodeIDPrimary, role: srv1alpha1.RolePrimary, primary: true},
		{cluster: s.target, rc: s.dr, nodeID: NodeIDDR, role: srv1alpha1.RoleSecondary},
	}
}

// createReplication allocates the port and minors (persisted first), then on
// each side picks the replica node and creates the replica holder pod, and
// brings up the DR replica. Only once the DR agent serves it does the VM stop,
// and only once it stopped is the primary's DRBDResource created: DRBD must
// attach the VM's disk before the VM writes to it again, or a block the VM
// rewrote after the initial sync passed it would be in no bitmap and never
// reach the DR copy. The VM starts again on its DRBD frontend in the next
// phase, so a protect costs the VM one restart. Once both agents reported
// their address the peers are written.
func (r *Reconciler) createReplication(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.req.Status.Port == 0 {
		if err := r.allocate(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		// Persist before anything uses the allocation: a crash after this point
		// finds the port in status and never allocates again.
		if err := r.persist(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	protocol, err := r.protocol(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	var nodes [2]string
	for i, sd := range s.sides() {
		node, ok, err := r.placeReplica(ctx, s, sd)
		if err != nil || !ok {
			return ctrl.Result{}, err
		}
		nodes[i] = node
	}
	// The peer-auth Secrets exist on both sides before a DRBDResource names them.
	auth, err := r.ensurePeerAuth(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	var res [2]*srv1alpha1.DRBDResource
	for _, i := range []int{1, 0} { // the DR replica first, the VM's disk last
		sd := s.sides()[i]
		if sd.primary {
			if stopped, err := r.stopForAttach(ctx, s, sd, res[1]); err != nil || !stopped {
				return ctrl.Result{}, err
			}
		}
		d := desiredDRBDResource(s, sd, nodes[i], protocol)
		d.Spec.PeerAuthentication = auth
		if err := createOwned(ctx, sd.rc, sd.cluster, s, d); err != nil {
			return ctrl.Result{}, err
		}
		if err := sd.rc.Direct.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return ctrl.Result{}, remoteErr(sd.cluster, "reading DRBDResource "+d.Name, err)
		}
		if err := applyPeerAuth(ctx, sd, d, auth); err != nil {
			return ctrl.Result{}, err
		}
		res[i] = d
		if d.Status.Address == "" {
			s.trail.Wait(ReasonWaitingForAgent, "waiting for the drbd-node-agent on node %s of cluster %s to report its replication address", nodes[i], sd.cluster)
			setCondition(s.req, ConditionReplicaProvisioned, metav1.ConditionFalse, ReasonWaitingForAgent,
				"DRBDResource %s exists on %s; waiting for node %s of %s to report its address", d.Name, sd.cluster, nodes[i], sd.cluster)
			return ctrl.Result{}, nil
		}
	}
	for i, sd := range s.sides() {
		other, otherSide := res[1-i], s.sides()[1-i]
		peers := []srv1alpha1.DRBDPeer{{
			NodeName: other.Spec.NodeName, NodeID: other.Spec.NodeID, Address: other.Status.Address,
			Port: other.Spec.Port, Cluster: otherSide.cluster,
		}}
		if equality.Semantic.DeepEqual(res[i].Spec.Peers, peers) {
			continue
		}
		patched := res[i].DeepCopy()
		patched.Spec.Peers = peers
		if err := sd.rc.Direct.Patch(ctx, patched, client.MergeFromWithOptions(res[i], client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, remoteErr(sd.cluster, "writing peers of DRBDResource "+patched.Name, err)
		}
	}
	recordPeerAuth(s, auth)
	setCondition(s.req, ConditionReplicaProvisioned, metav1.ConditionTrue, srv1alpha1.ReasonReconciled,
		"DRBDResource %s on %s (node %s) and %s (node %s), port %d", res[0].Name, s.primaryCluster, nodes[0], s.target, nodes[1], s.req.Status.Port)
	return r.advance(ctx, s, srv1alpha1.ProtectionSwitchingFrontend)
}

// stopForAttach stops the VM on the primary before DRBD attaches its disks and
// reports whether it is stopped. A primary DRBDResource of this request that
// exists already means the VM was stopped for it (a retry after a crash).
func (r *Reconciler) stopForAttach(ctx context.Context, s *scope, sd side, dr *srv1alpha1.DRBDResource) (bool, error) {
	d := &srv1alpha1.DRBDResource{}
	switch err := sd.rc.Direct.Get(ctx, types.NamespacedName{Namespace: s.vmNamespace(), Name: s.req.Status.DRBDResourceName}, d); {
	case err == nil && ownedBy(d, s):
		return true, nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, remoteErr(sd.cluster, "reading DRBDResource "+s.req.Status.DRBDResourceName, err)
	}
	vm := &kubevirtv1.VirtualMachine{}
	if err := sd.rc.Direct.Get(ctx, s.vmKey(), vm); err != nil {
		if apierrors.IsNotFound(err) {
			return false, flow.Stalled(ReasonVMNotFound, "VirtualMachine %s was deleted during protection", s.vmKey())
		}
		return false, remoteErr(sd.cluster, "reading VirtualMachine "+s.vmKey().String(), err)
	}
	why := fmt.Sprintf("the DR replica on node %s of %s is up; stopping VirtualMachine %s on %s so that DRBD attaches its disks before it writes again (it restarts on DRBD once the primary replica is Primary)",
		dr.Spec.NodeName, s.target, s.vmKey(), sd.cluster)
	if patched := vm.DeepCopy(); halt(patched) {
		if err := r.patchVM(ctx, s, sd, vm, patched, "stopping"); err != nil {
			return false, err
		}
		r.waitForVM(s, why)
		return false, nil
	}
	stopped, err := r.vmStopped(ctx, s, sd, vm)
	if err != nil || !stopped {
		r.waitForVM(s, fmt.Sprintf("%s (now %s)", why, printable(vm)))
	}
	return stopped, err
}

// waitForVM records that replication waits for the VM to stop.
func (r *Reconciler) waitForVM(s *scope, msg string) {
	s.trail.Wait(ReasonWaitingForVM, "%s", msg)
	setCondition(s.req, ConditionReplicaProvisioned, metav1.ConditionFalse, ReasonWaitingForVM, "%s", msg)
}

// protocol is the group's protocol when the group exists, else the request's,
// else A.
func (r *Reconciler) protocol(ctx context.Context, s *scope) (srv1alpha1.ReplicationProtocol, error) {
	group := &srv1alpha1.ProtectionGroup{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.req.Namespace, Name: s.req.Spec.ProtectionGroupRef.Name}, group)
	switch {
	case err == nil && group.Spec.Replication.Protocol != "":
		return group.Spec.Replication.Protocol, nil
	case err != nil && !apierrors.IsNotFound(err):
		return "", fmt.Errorf("reading ProtectionGroup %s: %w", s.req.Spec.ProtectionGroupRef.Name, err)
	case s.req.Spec.Protocol != "":
		return s.req.Spec.Protocol, nil
	default:
		return srv1alpha1.ProtocolA, nil
	}
}

// holderResources bound the holder: pause sleeps.
var holderResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("8Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")},
}

// holderPod consumes a side's backing PVCs as raw block devices on the replica
// node, so that the node has them attached for the drbd-node-agent. vmNode is
// the node of the VM it must share, if any (see holderPlacement).
func (r *Reconciler) holderPod(s *scope, sd side, vmNode string) *corev1.Pod {
	image := r.Options.HolderImage
	if image == "" {
		image = DefaultHolderImage
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.vmNamespace(), Name: HolderName(s.req.Spec.VirtualMachine.Name), Labels: labels(s.req, srv1alpha1.ObjectRoleHolder)},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			// The holder must stay while DRBD lost quorum on the node.
			Tolerations:                  []corev1.Toleration{{Key: srv1alpha1.LostQuorumTaintKey, Operator: corev1.TolerationOpExists}},
			AutomountServiceAccountToken: new(false),
			// PodSecurity "restricted": the holder only keeps the volumes
			// attached, it never opens them, so it needs no rights at all. It
			// runs as the image's own user (pause: USER 65535:65535, numeric,
			// so the kubelet can check runAsNonRoot); no fixed UID, which
			// platforms that assign a namespace's UIDs (OpenShift's
			// restricted-v2 SCC) refuse.
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: new(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "holder", Image: image,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: new(false), ReadOnlyRootFilesystem: new(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				Resources: holderResources,
			}},
		},
	}
	pod.Spec.Affinity, pod.Spec.TopologySpreadConstraints = holderPlacement(s, vmNode)
	for _, v := range s.req.Status.Volumes {
		name := fmt.Sprintf("vol-%d", v.Volume)
		claim := v.SourcePVC
		if !sd.primary {
			claim = v.TargetPVC
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
		pod.Spec.Containers[0].VolumeDevices = append(pod.Spec.Containers[0].VolumeDevices,
			corev1.VolumeDevice{Name: name, DevicePath: "/dev/siterecovery/" + name})
		if v.MetaPVC != "" {
			meta := name + "-meta"
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: meta, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.MetaPVC}}})
			pod.Spec.Containers[0].VolumeDevices = append(pod.Spec.Containers[0].VolumeDevices,
				corev1.VolumeDevice{Name: meta, DevicePath: "/dev/siterecovery/" + meta})
		}
	}
	return pod
}

// desiredDRBDResource is a side's DRBDResource, without peers.
func desiredDRBDResource(s *scope, sd side, node string, protocol srv1alpha1.ReplicationProtocol) *srv1alpha1.DRBDResource {
	d := &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.vmNamespace(), Name: s.req.Status.DRBDResourceName, Labels: labels(s.req, "")},
		Spec: srv1alpha1.DRBDResourceSpec{
			NodeName: node, NodeID: sd.nodeID, Port: s.req.Status.Port, Protocol: protocol, Role: sd.role,
			// The VM's own disks hold the data: DRBD's initial-sync procedure is a
			// forced first promotion on that side, which makes it the sync source.
			// It is cleared once the initial sync is done.
			ForcePromotion: sd.primary,
			// Quorum follows the role (QuorumForRole): a link outage fences the DR
			// replica, never the production VM's I/O.
			Quorum: srv1alpha1.QuorumForRole(sd.role),
			TLS:    zoneTLS(s.zone),
		},
	}
	for _, v := range s.req.Status.Volumes {
		claim := v.SourcePVC
		if !sd.primary {
			claim = v.TargetPVC
		}
		vol := srv1alpha1.DRBDVolume{
			Number: v.Volume, Minor: v.Minor, Disk: v.Disk,
			BackingPVC: &srv1alpha1.LocalObjectReference{Name: claim}, SizeBytes: v.SizeBytes,
		}
		if v.MetaPVC != "" {
			vol.MetaPVC = &srv1alpha1.LocalObjectReference{Name: v.MetaPVC}
		}
		d.Spec.Volumes = append(d.Spec.Volumes, vol)
	}
	return d
}
