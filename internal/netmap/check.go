package netmap

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// NADListKind is the list kind of Multus NetworkAttachmentDefinitions
// (k8s.cni.cncf.io/v1), read as unstructured: the CRD may be absent.
var NADListKind = schema.GroupVersionKind{Group: "k8s.cni.cncf.io", Version: "v1", Kind: "NetworkAttachmentDefinitionList"}

// Need is one Multus network a standby VM would use on the target.
type Need struct {
	// VM is "namespace/name" of the VM.
	VM string
	// Network is the name of the VM's network (spec.networks[].name).
	Network string
	// Source is the NetworkAttachmentDefinition the VM uses on the source,
	// qualified; "pod network" for the pod network a mapping replaces.
	Source string
	// Target is the NetworkAttachmentDefinition on the target, qualified.
	Target string
	// Mapped is true when the mapping names the network.
	Mapped bool
}

// Needs lists the Multus networks vm (as on the source cluster) needs on the
// target under m (nil: no mapping).
func Needs(vm *kubevirtv1.VirtualMachine, m *srv1alpha1.NetworkMapping) []Need {
	if vm.Spec.Template == nil {
		return nil
	}
	key := vm.Namespace + "/" + vm.Name
	var out []Need
	for _, n := range vm.Spec.Template.Spec.Networks {
		switch {
		case n.Multus != nil:
			need := Need{VM: key, Network: n.Name, Source: Qualify(n.Multus.NetworkName, vm.Namespace)}
			need.Target = need.Source
			if m != nil {
				if t, ok := target(m, n.Multus.NetworkName, vm.Namespace); ok {
					need.Target, need.Mapped = Qualify(t, vm.Namespace), true
				}
			}
			out = append(out, need)
		case n.Pod != nil && m != nil && m.PodNetwork != "":
			out = append(out, Need{VM: key, Network: n.Name, Source: "pod network", Target: Qualify(m.PodNetwork, vm.Namespace), Mapped: true})
		}
	}
	return out
}

// Available is what a target cluster has: its NetworkAttachmentDefinitions
// by "namespace/name", or NoCRD when it serves no k8s.cni.cncf.io API.
type Available struct {
	NADs  map[string]bool
	NoCRD bool
}

// Read lists the NetworkAttachmentDefinitions of the namespaces needs name
// on a target cluster.
func Read(ctx context.Context, c client.Reader, needs []Need) (Available, error) {
	av := Available{NADs: map[string]bool{}}
	var namespaces []string
	for _, n := range needs {
		ns, _, _ := strings.Cut(n.Target, "/")
		if !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	for _, ns := range namespaces {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(NADListKind)
		err := c.List(ctx, list, client.InNamespace(ns))
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return Available{NoCRD: true}, nil
		}
		if err != nil {
			return Available{}, fmt.Errorf("listing NetworkAttachmentDefinitions in %s: %w", ns, err)
		}
		for _, item := range list.Items {
			av.NADs[ns+"/"+item.GetName()] = true
		}
	}
	return av, nil
}

// Check returns, for the VMs moving from source to target, the problems
// (a network the VM uses that no mapping names and that target lacks) and
// the warnings (a mapped network whose target is missing).
func Check(needs []Need, source, target string, av Available) (problems, warnings []string) {
	noCRD := ""
	if av.NoCRD {
		noCRD = fmt.Sprintf("; cluster %s serves no NetworkAttachmentDefinition API (k8s.cni.cncf.io): only the pod network exists there", target)
	}
	for _, n := range needs {
		if av.NADs[n.Target] {
			continue
		}
		if n.Mapped {
			warnings = append(warnings, fmt.Sprintf("VM %s network %s (%s) is mapped from %s to %s, which cluster %s does not have%s",
				n.VM, n.Network, n.Source, source, n.Target, target, noCRD))
			continue
		}
		problems = append(problems, fmt.Sprintf("VM %s network %s uses NetworkAttachmentDefinition %s, which no networkMappings entry from %s to %s maps and cluster %s does not have%s",
			n.VM, n.Network, n.Source, source, target, target, noCRD))
	}
	sort.Strings(problems)
	sort.Strings(warnings)
	return problems, warnings
}
