package netmap

import (
	"encoding/json"
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
// Generate drops the source's MACs and records them in
// OriginalMACsAnnotation (the ones the source itself recorded, if it is a
// generated copy); a MAC the standby carries that is not the source's was
// assigned on the target (KubeVirt, kubemacpool) and is kept, so that a
// mapped standby is not rewritten at every sync. Keep, or no mapping, copies
// the source's MACs except where the source recorded originals: those come
// back, so that failback after a Generate failover restores the primary's.
func Apply(tmpl *kubevirtv1.VirtualMachineInstanceTemplateSpec, vmNamespace string, m *srv1alpha1.NetworkMapping, have *kubevirtv1.VirtualMachineInstanceTemplateSpec) {
	originals := takeOriginalMACs(tmpl)
	spec := &tmpl.Spec
	if m == nil || m.MACPolicy != srv1alpha1.MACPolicyGenerate {
		restoreMACs(spec, originals)
	}
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
	var haveSpec *kubevirtv1.VirtualMachineInstanceSpec
	if have != nil {
		haveSpec = &have.Spec
	}
	recorded := map[string]string{}
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
			if mac := originals[iface.Name]; mac != "" {
				recorded[iface.Name] = mac
			} else if iface.MacAddress != "" {
				recorded[iface.Name] = iface.MacAddress
			}
			iface.MacAddress = assignedMAC(haveSpec, iface.Name, iface.MacAddress)
		}
	}
	recordOriginalMACs(tmpl, recorded)
}

// takeOriginalMACs removes OriginalMACsAnnotation from tmpl and returns what
// it held; nothing when it is absent or not a JSON object of strings (it is
// then dropped: it was not pg-sync's).
func takeOriginalMACs(tmpl *kubevirtv1.VirtualMachineInstanceTemplateSpec) map[string]string {
	raw, ok := tmpl.ObjectMeta.Annotations[srv1alpha1.OriginalMACsAnnotation]
	if !ok {
		return nil
	}
	delete(tmpl.ObjectMeta.Annotations, srv1alpha1.OriginalMACsAnnotation)
	if len(tmpl.ObjectMeta.Annotations) == 0 {
		tmpl.ObjectMeta.Annotations = nil
	}
	var out map[string]string
	if json.Unmarshal([]byte(raw), &out) != nil {
		return nil
	}
	return out
}

// recordOriginalMACs sets OriginalMACsAnnotation on tmpl when macs has any.
// encoding/json writes map keys sorted: the same MACs are the same text, so
// a standby is not rewritten for the annotation alone.
func recordOriginalMACs(tmpl *kubevirtv1.VirtualMachineInstanceTemplateSpec, macs map[string]string) {
	if len(macs) == 0 {
		return
	}
	b, err := json.Marshal(macs)
	if err != nil {
		return // a map of strings always marshals
	}
	if tmpl.ObjectMeta.Annotations == nil {
		tmpl.ObjectMeta.Annotations = map[string]string{}
	}
	tmpl.ObjectMeta.Annotations[srv1alpha1.OriginalMACsAnnotation] = string(b)
}

// restoreMACs gives each interface of spec the original MAC recorded for
// its name, if any.
func restoreMACs(spec *kubevirtv1.VirtualMachineInstanceSpec, originals map[string]string) {
	ifaces := spec.Domain.Devices.Interfaces
	for i := range ifaces {
		if mac := originals[ifaces[i].Name]; mac != "" {
			ifaces[i].MacAddress = mac
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
