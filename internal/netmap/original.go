package netmap

import (
	"encoding/json"
	"reflect"

	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Original is one entry of OriginalNetworksAnnotation: a network of the
// source VM that a mapping changed, with its interface, and what the mapping
// made of the network.
type Original struct {
	// Network is the source's network; nil in an entry read from the
	// MAC-only OriginalMACsAnnotation.
	Network *kubevirtv1.Network `json:"network,omitempty"`
	// Interface is the source's interface of the network's name.
	Interface *kubevirtv1.Interface `json:"interface,omitempty"`
	// Mapped is the network source the mapping gave the standby.
	Mapped *kubevirtv1.NetworkSource `json:"mapped,omitempty"`
}

// Originals returns the record on tmpl by network name: OriginalNetworksAnnotation,
// with the MACs of an OriginalMACsAnnotation that earlier versions wrote
// where it names no network. A record that is not JSON is none (it was not
// pg-sync's).
func Originals(tmpl *kubevirtv1.VirtualMachineInstanceTemplateSpec) map[string]Original {
	out := map[string]Original{}
	var macs map[string]string
	if json.Unmarshal([]byte(tmpl.ObjectMeta.Annotations[srv1alpha1.OriginalMACsAnnotation]), &macs) == nil {
		for name, mac := range macs {
			out[name] = Original{Interface: &kubevirtv1.Interface{Name: name, MacAddress: mac}}
		}
	}
	var nets map[string]Original
	if json.Unmarshal([]byte(tmpl.ObjectMeta.Annotations[srv1alpha1.OriginalNetworksAnnotation]), &nets) == nil {
		for name, o := range nets {
			out[name] = o
		}
	}
	return out
}

// takeOriginals returns Originals(tmpl) and removes both annotations: a
// standby records only what its own mapping changed.
func takeOriginals(tmpl *kubevirtv1.VirtualMachineInstanceTemplateSpec) map[string]Original {
	out := Originals(tmpl)
	delete(tmpl.ObjectMeta.Annotations, srv1alpha1.OriginalMACsAnnotation)
	delete(tmpl.ObjectMeta.Annotations, srv1alpha1.OriginalNetworksAnnotation)
	if len(tmpl.ObjectMeta.Annotations) == 0 {
		tmpl.ObjectMeta.Annotations = nil
	}
	return out
}

// restore gives spec back what a mapping changed on the source's own way
// there. A network comes back, with its interface's binding and port
// forwards, when it is still what that mapping made of it (not changed by
// hand since) and m does not map it; a MAC comes back always (m's MAC
// policy then applies to it).
func restore(spec *kubevirtv1.VirtualMachineInstanceSpec, originals map[string]Original, vmNamespace string, m *srv1alpha1.NetworkMapping) {
	restored := map[string]bool{}
	for i := range spec.Networks {
		n := &spec.Networks[i]
		o, ok := originals[n.Name]
		if !ok || o.Network == nil || o.Mapped == nil || !reflect.DeepEqual(n.NetworkSource, *o.Mapped) || mapsNetwork(m, n, vmNamespace) {
			continue
		}
		n.NetworkSource = o.Network.NetworkSource
		restored[n.Name] = true
	}
	ifaces := spec.Domain.Devices.Interfaces
	for i := range ifaces {
		iface := &ifaces[i]
		o := originals[iface.Name]
		if o.Interface == nil {
			continue
		}
		if restored[iface.Name] {
			iface.InterfaceBindingMethod, iface.Binding = o.Interface.InterfaceBindingMethod, o.Interface.Binding
			iface.Ports, iface.PortRanges = o.Interface.Ports, o.Interface.PortRanges
		}
		if o.Interface.MacAddress != "" {
			iface.MacAddress = o.Interface.MacAddress
		}
	}
}

// record sets OriginalNetworksAnnotation on tmpl for each network whose
// source or interface differs from before (the spec before the mapping).
// encoding/json writes map keys sorted: the same record is the same text, so
// a standby is not rewritten for the annotation alone.
func record(tmpl *kubevirtv1.VirtualMachineInstanceTemplateSpec, before *kubevirtv1.VirtualMachineInstanceSpec) {
	out := map[string]Original{}
	for i, n := range tmpl.Spec.Networks {
		if !reflect.DeepEqual(n.NetworkSource, before.Networks[i].NetworkSource) { // a mapping adds and removes none
			out[n.Name] = Original{Network: &before.Networks[i], Mapped: &tmpl.Spec.Networks[i].NetworkSource}
		}
	}
	for i, iface := range tmpl.Spec.Domain.Devices.Interfaces {
		was := &before.Domain.Devices.Interfaces[i]
		if o, changed := out[iface.Name]; changed || !sameAttachment(&iface, was) {
			o.Interface = was
			out[iface.Name] = o
		}
	}
	if len(out) == 0 {
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		return // networks and interfaces always marshal
	}
	if tmpl.ObjectMeta.Annotations == nil {
		tmpl.ObjectMeta.Annotations = map[string]string{}
	}
	tmpl.ObjectMeta.Annotations[srv1alpha1.OriginalNetworksAnnotation] = string(b)
}
