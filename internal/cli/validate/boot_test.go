package validate

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli/clusters"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// A group whose plan was admitted before a VM left it, or before the VMs'
// labels changed, is reported with the messages admission would refuse or
// warn with; a sound plan scores ok.
func TestBootPlanChecks(t *testing.T) {
	vm := func(name, tier string) *kubevirtv1.VirtualMachine {
		return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: map[string]string{"tier": tier}}}
	}
	group := func(vms ...string) *srv1alpha1.ProtectionGroup {
		g := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "shop"},
			Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "east", Boot: &srv1alpha1.BootPlan{Stages: []srv1alpha1.BootStage{
				{Name: "database", VirtualMachines: []string{"db"}, Gate: srv1alpha1.BootGate{Type: srv1alpha1.GateTCP, Port: 5432}},
				{Name: "web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}},
			}}}}
		for _, name := range vms {
			g.Spec.VirtualMachines = append(g.Spec.VirtualMachines, srv1alpha1.VirtualMachineReference{Namespace: "apps", Name: name})
		}
		return g
	}
	east := &clusters.Cluster{Name: "east", Client: fake.NewClientBuilder().WithScheme(scheme.New()).
		WithObjects(vm("db", "db"), vm("web-1", "web"), vm("web-2", "web"), vm("cache", "cache")).Build()}
	unreadable := &clusters.Cluster{Name: "east", Err: errors.New("Secret east-kubeconfig: forbidden")}
	for _, tc := range []struct {
		name     string
		group    *srv1alpha1.ProtectionGroup
		active   *clusters.Cluster
		want     []Score
		messages []string
	}{
		{"sound plan", group("db", "web-1", "web-2"), east, []Score{OK}, []string{"2 stages; each names VMs of the group"}},
		{"a named VM left the group", group("web-1", "web-2"), east, []Score{Problem},
			[]string{`boot stage database: virtualMachines entry "db" names no VM of the group (its VMs: apps/web-1, apps/web-2)`}},
		{"the selector matches no VM of the group", group("db", "cache"), east, []Score{Warning},
			[]string{"boot stage web: selector tier=web matches no VM of the group"}},
		{"active cluster unreadable", group("db", "web-1"), unreadable, []Score{Warning},
			[]string{"the stages' selectors were not matched against the group's VMs: no client of active cluster east: Secret east-kubeconfig: forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := &zoneCheck{r: &Report{}, zone: &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Name: "z"}}, conns: []*clusters.Cluster{tc.active}}
			z.bootPlan(context.Background(), tc.group)
			var scores []Score
			var messages []string
			for _, r := range z.r.Results {
				assert.Equal(t, "boot-plan", r.Check)
				assert.Equal(t, "shop", r.Target)
				scores = append(scores, r.Score)
				messages = append(messages, r.Message)
				if r.Score == Problem {
					assert.Equal(t, "edit spec.boot: kubectl edit protectiongroup shop -n dr", r.Fix)
				}
			}
			assert.Equal(t, tc.want, scores)
			for i, m := range tc.messages {
				if assert.Less(t, i, len(messages)) {
					assert.Contains(t, messages[i], m)
				}
			}
		})
	}
	// A group without a plan is not scored on one.
	z := &zoneCheck{r: &Report{}, conns: []*clusters.Cluster{east}}
	z.bootPlan(context.Background(), &srv1alpha1.ProtectionGroup{})
	assert.Empty(t, z.r.Results)
}
