package admission_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// bootPlans checks the ProtectionGroup webhook (a subtest of
// TestQuorumWebhooks, whose API servers and webhook server it shares): the
// worked example of docs/recovery-plans.md is admitted as written, with its
// selector matched against the VMs' labels on the primary; each mistake is
// refused with what to fix; a write that leaves the plan as it is is not
// checked, so a VM can leave a group whose plan names it.
func bootPlans(t *testing.T, e *env.Env, admin user) {
	ctx := context.Background()
	for name, tier := range map[string]string{"db": "db", "web-1": "web", "web-2": "web"} {
		require.NoError(t, e.Client(env.Primary).Create(ctx, &kubevirtv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name, Labels: map[string]string{"tier": tier}},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted),
				Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
		}))
	}
	doc := docsGroup(t)
	dry := client.DryRunAll

	// The example's selector is matched on the primary once the webhook
	// reaches it; until then it is admitted with a warning that says so.
	env.Eventually(t, 30*time.Second, "the example is admitted with its selector matched", func() error {
		if err := admin.Create(ctx, doc.DeepCopy(), dry); err != nil {
			return err
		}
		if w := admin.warnings.take(); len(w) > 0 {
			return errors.New(strings.Join(w, "; "))
		}
		return nil
	})
	require.NoError(t, admin.Create(ctx, doc.DeepCopy()))
	require.Empty(t, admin.warnings.take())

	refusals := []struct {
		name string
		edit func(g *srv1alpha1.ProtectionGroup)
		want string
	}{
		{"unknown VM", func(g *srv1alpha1.ProtectionGroup) { g.Spec.Boot.Stages[0].VirtualMachines = []string{"apps/postgres"} },
			`boot stage database: virtualMachines entry "apps/postgres" names no VM of the group (its VMs: apps/db, apps/web-1, apps/web-2); name a VM of spec.virtualMachines as name or namespace/name`},
		{"ambiguous name", func(g *srv1alpha1.ProtectionGroup) {
			g.Spec.VirtualMachines = append(g.Spec.VirtualMachines, srv1alpha1.VirtualMachineReference{Namespace: "shop", Name: "db"})
		}, `boot stage database: virtualMachines entry "db" is ambiguous: the group has a VM of that name in namespaces apps, shop; write namespace/name`},
		{"VM in two stages", func(g *srv1alpha1.ProtectionGroup) { g.Spec.Boot.Stages[1].VirtualMachines = []string{"apps/db"} },
			"VM apps/db is named by boot stages database and web; name it in one stage only"},
		{"invalid selector", func(g *srv1alpha1.ProtectionGroup) {
			g.Spec.Boot.Stages[1].Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn}}}
		}, "boot stage web: selector is invalid: "},
		{"blank step image", func(g *srv1alpha1.ProtectionGroup) { g.Spec.Boot.Stages[0].PreStart = &srv1alpha1.BootStep{Image: " "} },
			"boot stage database: preStart.image is empty; give the image of the step's container"},
		{"service account no DNS subdomain", func(g *srv1alpha1.ProtectionGroup) {
			g.Spec.Boot.Stages[1].PostStart = &srv1alpha1.BootStep{Image: "registry.example.com/smoke:1", ServiceAccountName: "Smoke_Test"}
		}, `boot stage web: postStart.serviceAccountName "Smoke_Test" is not a ServiceAccount name: a lowercase RFC 1123 subdomain`},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			g := doc.DeepCopy()
			g.Name = "bad"
			r.edit(g)
			err := admin.Create(ctx, g, dry)
			denied(t, err, "spec.boot of ProtectionGroup bad: "+r.want)
			if r.name == "invalid selector" {
				require.Contains(t, err.Error(), "values set can't be empty")
			}
		})
	}

	t.Run("selector matching no VM is a warning", func(t *testing.T) {
		g := doc.DeepCopy()
		g.Name = "warned"
		g.Spec.Boot.Stages[1].Selector.MatchLabels["tier"] = "frontend"
		require.NoError(t, admin.Create(ctx, g, dry))
		w := admin.warnings.take()
		require.Len(t, w, 1)
		require.Contains(t, w[0], `boot stage web: selector tier=frontend matches no VM of the group; the VMs no stage takes start in the last, implicit stage "remaining"`)
	})

	t.Run("a VM leaves a group whose plan names it", func(t *testing.T) {
		g := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(doc), g))
		g.Spec.VirtualMachines = g.Spec.VirtualMachines[1:] // apps/db leaves, as unprotect does
		require.NoError(t, admin.Update(ctx, g), "a write that leaves the plan as it is is not checked")
		// A change of the plan is checked against the VMs the group has now.
		g.Spec.Boot.Stages[0].TimeoutSeconds = 900
		denied(t, admin.Update(ctx, g, dry), `virtualMachines entry "db" names no VM of the group (its VMs: apps/web-1, apps/web-2)`)
		g.Spec.Boot.Stages = g.Spec.Boot.Stages[1:]
		require.NoError(t, admin.Update(ctx, g, dry))
	})
}

// docsGroup is the worked example of docs/recovery-plans.md: its first yaml
// block, a ProtectionGroup.
func docsGroup(t *testing.T) *srv1alpha1.ProtectionGroup {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "docs", "recovery-plans.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(page), "```yaml\n")
	require.True(t, ok, "docs/recovery-plans.md shows a yaml block")
	manifest, _, _ := strings.Cut(rest, "```")
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(manifest), g))
	require.Equal(t, "ProtectionGroup", g.Kind)
	require.Equal(t, env.Namespace, g.Namespace)
	require.NotNil(t, g.Spec.Boot)
	return g
}
