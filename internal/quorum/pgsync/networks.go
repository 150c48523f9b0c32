package pgsync

import (
	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/netmap"
)

// wantStandby is the spec pg-sync owns of src's standby on cluster target:
// standbySpec with the network mapping from the active cluster to target
// applied (the group's entry for the pair, else the zone's). standby is the
// standby as it is on target, nil when there is none: a MAC address the
// target assigned under MAC policy Generate stays. What the mapping changes
// (networks, interfaces, MACs) is recorded in the standby's template
// (OriginalNetworksAnnotation) and comes back on the way back unless the
// reverse pair maps it itself.
func (s *scope) wantStandby(src, standby *kubevirtv1.VirtualMachine, target string) kubevirtv1.VirtualMachineSpec {
	want := standbySpec(&src.Spec)
	if want.Template == nil {
		return want
	}
	var zoneMappings []srv1alpha1.NetworkMapping
	if s.zone != nil {
		zoneMappings = s.zone.Spec.NetworkMappings
	}
	m := srv1alpha1.NetworkMappingFor(s.group.Spec.NetworkMappings, zoneMappings, s.group.Spec.ActiveCluster, target)
	var have *kubevirtv1.VirtualMachineInstanceTemplateSpec
	if standby != nil {
		have = standby.Spec.Template
	}
	netmap.Apply(want.Template, src.Namespace, m, have)
	return want
}
