package v1alpha1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CheckBootPlan is what admission refuses and validate reports: each case is
// one mistake in an otherwise good two-tier plan, and the message says what
// to fix.
func TestCheckBootPlan(t *testing.T) {
	vms := []VirtualMachineReference{{Namespace: "apps", Name: "db"}, {Namespace: "apps", Name: "web-1"},
		{Namespace: "apps", Name: "web-2"}, {Namespace: "shop", Name: "web-1"}}
	vmLabels := map[string]map[string]string{
		"apps/db": {"tier": "db"}, "apps/web-1": {"tier": "web"}, "apps/web-2": {"tier": "web"}, "shop/web-1": {"tier": "web"},
	}
	good := func() *BootPlan {
		return &BootPlan{Stages: []BootStage{
			{Name: "database", VirtualMachines: []string{"db"}, Gate: BootGate{Type: GateTCP, Port: 5432},
				PreStart: &BootStep{Image: "registry.example/db-check:1", ServiceAccountName: "db-check"}},
			{Name: "web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}},
		}}
	}
	for _, tc := range []struct {
		name             string
		edit             func(p *BootPlan)
		vms              []VirtualMachineReference
		problem, warning string
		// also is a second warning the mistake causes.
		also string
	}{
		{name: "good plan", edit: func(*BootPlan) {}},
		{name: "unknown VM", edit: func(p *BootPlan) { p.Stages[0].VirtualMachines = []string{"apps/postgres"} },
			problem: `boot stage database: virtualMachines entry "apps/postgres" names no VM of the group (its VMs: apps/db, apps/web-1, apps/web-2, shop/web-1); name a VM of spec.virtualMachines as name or namespace/name`},
		{name: "group without VMs", edit: func(*BootPlan) {}, vms: []VirtualMachineReference{},
			problem: `boot stage database: virtualMachines entry "db" names no VM of the group, which has none yet; protect the VM first`,
			warning: "boot stage web: selector tier=web matches no VM of the group"},
		{name: "ambiguous bare name", edit: func(p *BootPlan) { p.Stages[1].VirtualMachines = []string{"web-1"} },
			problem: `boot stage web: virtualMachines entry "web-1" is ambiguous: the group has a VM of that name in namespaces apps, shop; write namespace/name`},
		{name: "VM in two stages", edit: func(p *BootPlan) { p.Stages[1].VirtualMachines = []string{"apps/db"} },
			problem: "VM apps/db is named by boot stages database and web; name it in one stage only"},
		{name: "VM twice in a stage", edit: func(p *BootPlan) { p.Stages[0].VirtualMachines = []string{"db", "apps/db"} },
			problem: "boot stage database names VM apps/db twice; keep one entry"},
		{name: "invalid selector", edit: func(p *BootPlan) {
			p.Stages[1].Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
		}, problem: `boot stage web: selector is invalid: "Near" is not a valid label selector operator`},
		{name: "blank image", edit: func(p *BootPlan) { p.Stages[0].PreStart.Image = " " },
			problem: "boot stage database: preStart.image is empty; give the image of the step's container"},
		{name: "image with a space", edit: func(p *BootPlan) { p.Stages[1].PostStart = &BootStep{Image: "busybox sh"} },
			problem: `boot stage web: postStart.image "busybox sh" is not an image reference: it contains white space`},
		{name: "service account not a DNS subdomain", edit: func(p *BootPlan) { p.Stages[0].PreStart.ServiceAccountName = "DB_Check" },
			problem: `boot stage database: preStart.serviceAccountName "DB_Check" is not a ServiceAccount name: a lowercase RFC 1123 subdomain`},
		{name: "selector matches nothing", edit: func(p *BootPlan) { p.Stages[1].Selector.MatchLabels["tier"] = "frontend" },
			warning: `boot stage web: selector tier=frontend matches no VM of the group; the VMs no stage takes start in the last, implicit stage "remaining"`},
		{name: "named VM taken by an earlier selector", edit: func(p *BootPlan) {
			p.Stages = append(p.Stages, BootStage{Name: "late", VirtualMachines: []string{"web-2"}})
		}, warning: "boot stage late names VM apps/web-2, which starts in the earlier stage web, whose selector matches it",
			also: "boot stage late starts no VM"},
		{name: "stage left without VMs", edit: func(p *BootPlan) {
			p.Stages = append(p.Stages, BootStage{Name: "also-web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}})
		}, warning: "boot stage also-web starts no VM: earlier stages take every VM it names or selects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good()
			tc.edit(p)
			groupVMs := vms
			if tc.vms != nil {
				groupVMs = tc.vms
			}
			problems, warnings := CheckBootPlan(p, groupVMs, vmLabels)
			expect(t, "problems", problems, tc.problem)
			expect(t, "warnings", warnings, tc.warning, tc.also)
		})
	}
}

// Without the VMs' labels (the active cluster could not be read) selectors
// are not matched, so nothing is said of them; names are still checked.
func TestCheckBootPlanWithoutLabels(t *testing.T) {
	p := &BootPlan{Stages: []BootStage{
		{Name: "web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "nothing"}}},
		{Name: "db", VirtualMachines: []string{"nope"}},
	}}
	problems, warnings := CheckBootPlan(p, []VirtualMachineReference{{Namespace: "apps", Name: "db"}}, nil)
	expect(t, "problems", problems, `virtualMachines entry "nope" names no VM of the group (its VMs: apps/db)`)
	expect(t, "warnings", warnings, "")
	problems, warnings = CheckBootPlan(nil, nil, nil)
	expect(t, "problems", problems, "")
	expect(t, "warnings", warnings, "")
}

// expect asserts that got holds one message per non-empty want, in order,
// each containing it.
func expect(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	var wants []string
	for _, w := range want {
		if w != "" {
			wants = append(wants, w)
		}
	}
	if len(got) != len(wants) {
		t.Fatalf("want %d %s containing %q, got %q", len(wants), what, wants, got)
	}
	for i := range wants {
		if !strings.Contains(got[i], wants[i]) {
			t.Fatalf("%s[%d] = %q, want it to contain %q", what, i, got[i], wants[i])
		}
	}
}
