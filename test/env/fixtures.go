package env

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// DRBDReplica is one side of a VM's DRBD resource pair, as the protection flow
// creates it: named "vm-<vm>" in AppNS, labelled with its group and the DR
// namespace that owns it (a group of the same name in another namespace must
// not claim it), one volume, Secondary, the peer on the other workload cluster
// on the same port.
func DRBDReplica(group, vm, local, peer string, nodeID, port int32) *srv1alpha1.DRBDResource {
	return &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: AppNS, Name: srv1alpha1.DRBDResourceName(vm),
			Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: group, srv1alpha1.DRNamespaceLabel: Namespace}},
		Spec: srv1alpha1.DRBDResourceSpec{
			NodeName: Nodes[local].Name, NodeID: nodeID, Port: port, Protocol: srv1alpha1.ProtocolA,
			Role:    srv1alpha1.RoleSecondary,
			Volumes: []srv1alpha1.DRBDVolume{{Number: 0, Minor: 1000 + port - 7000, DevicePath: "/dev/vg0/" + vm}},
			Peers: []srv1alpha1.DRBDPeer{{NodeName: Nodes[peer].Name, NodeID: 1 - nodeID,
				Address: Nodes[peer].Address, Port: port, Cluster: peer}},
		},
	}
}

// WorkloadGroup is a workload cluster's copy of a group, as pg-sync writes it.
func WorkloadGroup(name string, refs []srv1alpha1.VirtualMachineReference, state srv1alpha1.GroupState) *srv1alpha1.ProtectionGroup {
	return &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec:       srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, DesiredState: state},
	}
}
