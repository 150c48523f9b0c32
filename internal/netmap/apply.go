package netmap

import (
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

// Apply rewrites spec, a standby's template built from the source VM, for m
// (nil keeps everything): mapped Multus network names, the pod network
// replaced by a default Multus network, and with MAC policy Generate the
// source's MAC addresses dropped. have is the standby's template as it is on
// the target (nil for a new one): a MAC it carries that is not the source's
// was assigned there (KubeVirt, kubemacpool) and is kept, so that a mapped
// standby is not rewritten at every sync.
func Apply(spec *kubevirtv1.VirtualMachineInstanceSpec, vmNamespace string, m *srv1alpha1.NetworkMapping, have *kubevirtv1.VirtualMachineInstanceSpec) {
	if m == nil {
		return
	}
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
	ifaces := spec.Domain.Devices.Interfaces
	for i := range ifaces {
		iface := &ifaces[i]
		if podReplaced[iface.Name] && iface.Masquerade != nil {
			// KubeVirt admits masquerade on the pod network only (kubevirt
			// pkg/network/admitter, validateMasqueradeBinding); its port
			// forwards go with it.
			iface.InterfaceBindingMethod = kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}
			iface.Ports = nil
		}
		if m.MACPolicy == srv1alpha1.MACPolicyGenerate {
			iface.MacAddress = assignedMAC(have, iface.Name, iface.MacAddress)
		}
	}
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
