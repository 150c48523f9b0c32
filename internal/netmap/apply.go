package netmap

import (
	"reflect"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Qualify returns a Multus network name as "namespace/name": a bare name is
// the NetworkAttachmentDefinition in the VM's namespace, as KubeVirt resolves
// spec.networks[].multus.networkName.
func Qualify(name, vmNamespace string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return vmNamespace + "/" + name
}

// Apply rewrites tmpl, a standby's template built from the source VM's, for
// m (nil: no mapping): mapped Multus network names, the pod network replaced
// by a default Multus network, and the MACs by the MAC policy. have is the
// standby's template as it is on the target (nil for a new one).
//
// First what a mapping changed on the VM's way to the source comes back
// (OriginalNetworksAnnotation, see restore): a failback gives the primary's
// VMs the networks, interfaces and MACs they had, unless m maps the network
// itself. Then m applies, and what it changes is recorded for the way back.
//
// Generate drops the source's MACs; a MAC the standby carries that is not the
// source's was assigned on the target (KubeVirt, kubemacpool) and is kept, so
// that a mapped standby is not rewritten at every sync.
func Apply(tmpl *kubevirtv1.VirtualMachineInstanceTemplateSpec, vmNamespace string, m *srv1alpha1.NetworkMapping, have *kubevirtv1.VirtualMachineInstanceTemplateSpec) {
	spec := &tmpl.Spec
	sourceMACs := map[string]string{}
	for _, iface := range spec.Domain.Devices.Interfaces {
		sourceMACs[iface.Name] = iface.MacAddress
	}
	restore(spec, takeOriginals(tmpl), vmNamespace, m)
	if m == nil {
		return
	}
	before := spec.DeepCopy()
	podReplaced := map[string]bool{}
	for i := range spec.Networks {
		n := &spec.Networks[i]
		switch {
		case n.Multus != nil:
			if t, ok := target(m, n.Multus.NetworkName, vmNamespace); ok {
				n.Multus.NetworkName = t
			}
		case n.Pod != nil && m.PodNetwork != "":
			// The pod's primary network becomes the Multus one (multus.default).
			n.NetworkSource = kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: m.PodNetwork, Default: true}}
			podReplaced[n.Name] = true
		}
	}
	var haveSpec *kubevirtv1.VirtualMachineInstanceSpec
	if have != nil {
		haveSpec = &have.Spec
	}
	ifaces := spec.Domain.Devices.Interfaces
	for i := range ifaces {
		iface := &ifaces[i]
		if podReplaced[iface.Name] && iface.Masquerade != nil {
			// KubeVirt admits masquerade on the pod network only (kubevirt
			// pkg/network/admitter, validateMasqueradeBinding); its port
			// forwards go with it (portRanges: masquerade only, kubevirt
			// api core/v1 schema.go Interface).
			iface.InterfaceBindingMethod = kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}
			iface.Ports, iface.PortRanges = nil, nil
		}
		if m.MACPolicy == srv1alpha1.MACPolicyGenerate {
			iface.MacAddress = assignedMAC(haveSpec, iface.Name, sourceMACs[iface.Name])
		}
	}
	record(tmpl, before)
}

// target is the target network of a source network name, if m maps it.
func target(m *srv1alpha1.NetworkMapping, source, vmNamespace string) (string, bool) {
	q := Qualify(source, vmNamespace)
	for _, n := range m.Networks {
		if Qualify(n.Source, vmNamespace) == q {
			return n.Target, true
		}
	}
	return "", false
}

// mapsNetwork is true when m says itself what network n becomes: its networks name
// n's Multus network, or n is the pod network and m replaces it.
func mapsNetwork(m *srv1alpha1.NetworkMapping, n *kubevirtv1.Network, vmNamespace string) bool {
	switch {
	case m == nil:
		return false
	case n.Multus != nil:
		_, ok := target(m, n.Multus.NetworkName, vmNamespace)
		return ok
	default:
		return n.Pod != nil && m.PodNetwork != ""
	}
}

// assignedMAC is the MAC the standby's interface name carries on the target
// when it is not the source's MAC, else none.
func assignedMAC(have *kubevirtv1.VirtualMachineInstanceSpec, name, sourceMAC string) string {
	if have == nil {
		return ""
	}
	for _, iface := range have.Domain.Devices.Interfaces {
		if iface.Name == name && !strings.EqualFold(iface.MacAddress, sourceMAC) {
			return iface.MacAddress
		}
	}
	return ""
}

// sameAttachment is true when a and b attach to their network the same way:
// binding, port forwards and MAC, the fields a mapping changes.
func sameAttachment(a, b *kubevirtv1.Interface) bool {
	return reflect.DeepEqual(a.InterfaceBindingMethod, b.InterfaceBindingMethod) && reflect.DeepEqual(a.Binding, b.Binding) &&
		reflect.DeepEqual(a.Ports, b.Ports) && reflect.DeepEqual(a.PortRanges, b.PortRanges) && a.MacAddress == b.MacAddress
}
