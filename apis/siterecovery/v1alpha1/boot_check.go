package v1alpha1

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// CheckBootPlan checks a group's boot plan against the group's VMs, beyond
// what the schema checks: quorum-manager's admission webhook refuses a plan
// with problems when it is written, and `kubectl siterecovery validate`
// reports them for a group that changed since (a VM left it, say). Both read
// the same messages, each of which says what to fix.
//
// vmLabels holds the labels of the group's VMs by "namespace/name", as the
// group's active cluster shows them; nil when they could not be read, and
// then no selector is matched against the VMs. Selectors may overlap each
// other and the names: a VM starts in the first stage that names or selects
// it. The warnings are a stage whose selector matches no VM of the group, a
// VM a stage names that an earlier stage's selector takes, and a stage left
// with no VM to start.
func CheckBootPlan(plan *BootPlan, vms []VirtualMachineReference, vmLabels map[string]map[string]string) (problems, warnings []string) {
	if plan == nil {
		return nil, nil
	}
	namedBy := map[string]string{} // VM key -> first stage naming it
	taken := map[string]string{}   // VM key -> the stage that starts it
	for i := range plan.Stages {
		st := &plan.Stages[i]
		var own []string
		for _, entry := range st.VirtualMachines {
			key, problem := resolveBootVM(st.Name, entry, vms)
			if problem != "" {
				problems = append(problems, problem)
				continue
			}
			switch first, named := namedBy[key]; {
			case named && first == st.Name:
				problems = append(problems, fmt.Sprintf("boot stage %s names VM %s twice; keep one entry", st.Name, key))
			case named:
				problems = append(problems, fmt.Sprintf("VM %s is named by boot stages %s and %s; name it in one stage only", key, first, st.Name))
			default:
				namedBy[key] = st.Name
				own = append(own, key)
			}
		}
		problems = append(problems, stepProblems(st)...)
		sel, problem := stageSelector(st)
		if problem != "" {
			problems = append(problems, problem)
		}
		warnings = append(warnings, stageWarnings(st, sel, own, vms, vmLabels, taken)...)
	}
	return problems, warnings
}

// resolveBootVM returns the key of the one group VM a stage's entry names,
// "name" (any namespace of the group) or "namespace/name", or why it names
// none.
func resolveBootVM(stage, entry string, vms []VirtualMachineReference) (string, string) {
	var matches []string
	for _, vm := range vms {
		key := vm.Namespace + "/" + vm.Name
		if key == entry || (!strings.Contains(entry, "/") && vm.Name == entry) {
			matches = append(matches, key)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], ""
	case len(matches) > 1:
		namespaces := make([]string, 0, len(matches))
		for _, m := range matches {
			ns, _, _ := strings.Cut(m, "/")
			namespaces = append(namespaces, ns)
		}
		return "", fmt.Sprintf("boot stage %s: virtualMachines entry %q is ambiguous: the group has a VM of that name in namespaces %s; write namespace/name",
			stage, entry, strings.Join(namespaces, ", "))
	case len(vms) == 0:
		return "", fmt.Sprintf("boot stage %s: virtualMachines entry %q names no VM of the group, which has none yet; protect the VM first (a ProtectionRequest adds it to the group), or take VMs by selector",
			stage, entry)
	}
	return "", fmt.Sprintf("boot stage %s: virtualMachines entry %q names no VM of the group (%s); name a VM of spec.virtualMachines as name or namespace/name",
		stage, entry, groupVMList(vms))
}

// groupVMList names the group's VMs for a message, the first ten of them.
func groupVMList(vms []VirtualMachineReference) string {
	keys := make([]string, 0, len(vms))
	for _, vm := range vms {
		keys = append(keys, vm.Namespace+"/"+vm.Name)
	}
	sort.Strings(keys)
	if len(keys) > 10 {
		return fmt.Sprintf("its VMs: %s and %d more", strings.Join(keys[:10], ", "), len(keys)-10)
	}
	return "its VMs: " + strings.Join(keys, ", ")
}

// stepProblems checks a stage's steps beyond the schema, which checks only
// that an image is given.
func stepProblems(st *BootStage) []string {
	var problems []string
	for _, s := range []struct {
		field string
		step  *BootStep
	}{{"preStart", st.PreStart}, {"postStart", st.PostStart}} {
		if s.step == nil {
			continue
		}
		switch img := s.step.Image; {
		case strings.TrimSpace(img) == "":
			problems = append(problems, fmt.Sprintf("boot stage %s: %s.image is empty; give the image of the step's container", st.Name, s.field))
		case strings.ContainsAny(img, " \t\r\n"):
			problems = append(problems, fmt.Sprintf("boot stage %s: %s.image %q is not an image reference: it contains white space", st.Name, s.field, img))
		}
		if sa := s.step.ServiceAccountName; sa != "" {
			if errs := validation.IsDNS1123Subdomain(sa); len(errs) > 0 {
				problems = append(problems, fmt.Sprintf("boot stage %s: %s.serviceAccountName %q is not a ServiceAccount name: %s",
					st.Name, s.field, sa, strings.Join(errs, "; ")))
			}
		}
	}
	return problems
}

// stageSelector parses a stage's selector: nil without one, or when it is
// invalid, with the problem.
func stageSelector(st *BootStage) (labels.Selector, string) {
	if st.Selector == nil {
		return nil, ""
	}
	sel, err := metav1.LabelSelectorAsSelector(st.Selector)
	if err != nil {
		return nil, fmt.Sprintf("boot stage %s: selector is invalid: %v", st.Name, err)
	}
	return sel, ""
}

// stageWarnings matches a stage's selector against the VMs' labels and marks
// the VMs the stage takes, as the plan sorts them: a VM belongs to the first
// stage that names it or whose selector matches it.
func stageWarnings(st *BootStage, sel labels.Selector, own []string, vms []VirtualMachineReference,
	vmLabels map[string]map[string]string, taken map[string]string) []string {
	var warnings []string
	starts := 0
	for _, key := range own {
		if taken[key] != "" {
			warnings = append(warnings, fmt.Sprintf("boot stage %s names VM %s, which starts in the earlier stage %s, whose selector matches it", st.Name, key, taken[key]))
			continue
		}
		starts++
	}
	matched, fresh := 0, 0
	if sel != nil && vmLabels != nil {
		for _, vm := range vms {
			key := vm.Namespace + "/" + vm.Name
			if !sel.Matches(labels.Set(vmLabels[key])) {
				continue
			}
			matched++
			if taken[key] == "" && !slices.Contains(own, key) {
				fresh++
				taken[key] = st.Name
			}
		}
		if matched == 0 {
			warnings = append(warnings, fmt.Sprintf("boot stage %s: selector %s matches no VM of the group; the VMs no stage takes start in the last, implicit stage %q",
				st.Name, metav1.FormatLabelSelector(st.Selector), ImplicitStageName))
		}
	}
	for _, key := range own {
		if taken[key] == "" {
			taken[key] = st.Name
		}
	}
	if (matched > 0 || len(own) > 0) && starts+fresh == 0 {
		warnings = append(warnings, fmt.Sprintf("boot stage %s starts no VM: earlier stages take every VM it names or selects", st.Name))
	}
	return warnings
}
