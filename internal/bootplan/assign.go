package bootplan

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// VM is one VM of the group as a plan sorts it.
type VM struct {
	// Key is "namespace/name".
	Key    string
	Labels map[string]string
}

// Stage is a stage with the group VMs it starts, the implicit one included.
type Stage struct {
	srv1alpha1.BootStage
	// VMs are the keys of the stage's VMs, in group order.
	VMs []string
	// Unknown are names the stage lists that are no VM of the group.
	Unknown []string
}

// Stages sorts vms into the plan's stages: a VM belongs to the first stage
// that names it or whose selector matches its labels, and a VM no stage
// takes to the implicit last stage, which exists only when it has VMs.
func Stages(plan *srv1alpha1.BootPlan, vms []VM) ([]Stage, error) {
	taken := map[string]bool{}
	var out []Stage
	if plan != nil {
		for _, bs := range plan.Stages {
			st := Stage{BootStage: bs}
			sel, err := selectorOf(bs.Selector)
			if err != nil {
				return nil, fmt.Errorf("boot stage %s: selector: %w", bs.Name, err)
			}
			for _, name := range bs.VirtualMachines {
				if !slices.ContainsFunc(vms, func(v VM) bool { return names(v.Key, name) }) {
					st.Unknown = append(st.Unknown, name)
				}
			}
			for _, v := range vms {
				if taken[v.Key] {
					continue
				}
				if slices.ContainsFunc(bs.VirtualMachines, func(n string) bool { return names(v.Key, n) }) ||
					(sel != nil && sel.Matches(labels.Set(v.Labels))) {
					taken[v.Key] = true
					st.VMs = append(st.VMs, v.Key)
				}
			}
			out = append(out, st)
		}
	}
	rest := Stage{BootStage: srv1alpha1.BootStage{Name: srv1alpha1.ImplicitStageName, TimeoutSeconds: implicitTimeoutSeconds}}
	for _, v := range vms {
		if !taken[v.Key] {
			rest.VMs = append(rest.VMs, v.Key)
		}
	}
	if len(rest.VMs) > 0 {
		out = append(out, rest)
	}
	return out, nil
}

// implicitTimeoutSeconds bounds the implicit stage as a declared stage's
// default bounds it.
const implicitTimeoutSeconds = 300

// names reports whether name ("name" or "namespace/name") names key.
func names(key, name string) bool {
	if strings.Contains(name, "/") {
		return key == name
	}
	_, n, _ := strings.Cut(key, "/")
	return n == name
}

func selectorOf(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return nil, nil //nolint:nilnil // no selector selects nothing
	}
	return metav1.LabelSelectorAsSelector(ls)
}
