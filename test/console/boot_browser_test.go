package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/internal/console/ui"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/bootfixture"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestBootPlanInBrowser signs in as a viewer on a quorum cluster alone (no
// controller runs) holding a group with a boot plan, a completed failover
// whose plan succeeded and a test failover whose plan stopped, with their
// statuses written as the controllers write them. The group page shows the
// plan's stages in order with gate, timeout and step images and no step env
// value; each request shows its stages with phase and time taken, and the
// stopped one where it stopped and what to do. The Operations page shows a
// request's stages too.
func TestBootPlanInBrowser(t *testing.T) {
	chromium(t)
	s := scheme.New()
	ctx := context.Background()
	ns := env.Namespace
	c, token := viewerQuorum(t, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: group},
		Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: env.DR, ZoneRef: &srv1alpha1.LocalObjectReference{Name: "production"},
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Name: "vm-00", Namespace: "apps"}, {Name: "vm-01", Namespace: "apps"}},
			Replication:     srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: 60}}})
	require.NoError(t, bootfixture.Write(ctx, c.Client, ns, group, env.DR, time.Now().Add(-2*time.Hour).Truncate(time.Second)))

	url := serveHTTPS(t, server.New(server.Options{API: c.Config, Scheme: s, UI: ui.FS(), TLS: true,
		Namespaces: []string{ns}, LoginAttempts: 1000}))
	b := newBrowser(t, url)
	defer func() { t.Logf("screenshots:\n  %s", strings.Join(b.seen, "\n  ")) }()
	b.signIn(token)
	b.openGroup()

	// The plan: stages in order, each with its VMs, gate, timeout and steps.
	plan := `//table[@aria-label='Boot plan']`
	for i, row := range [][]string{
		{"database", "apps/vm-00", "TCP port 5432", "10 min", bootfixture.PreImage, "—"},
		{"web", "labels tier=web", "HTTP GET :8080/healthz", "5 min", "—", bootfixture.PostImage},
		{"remaining implicit", "the VMs no stage names or selects", "VM Ready", "5 min", "—", "—"},
	} {
		cells := fmt.Sprintf(`%s//tbody/tr[%d]`, plan, i+1)
		for j, want := range row {
			b.run(fmt.Sprintf("plan row %d column %d reads %s", i+1, j+2, want),
				chromedp.WaitVisible(chromedp.Search(fmt.Sprintf(`%s/td[%d][normalize-space(.)=%q]`, cells, j+2, want))))
		}
	}
	b.waitText("A stage that times out or whose step fails: Stop, the later stages are not started")
	shown := eval[string](b, "the page's text", `document.body.innerText`)
	require.NotContains(t, shown, bootfixture.StepEnvValue, "a step's env value is not shown")

	// Each request's stages: phase and time taken.
	stage := func(op, name, phase, took string) {
		row := fmt.Sprintf(`//table[@aria-label='Boot stages of %s']//tr[td[@data-label='Stage'][normalize-space(.)=%q]]`, op, name)
		b.run(fmt.Sprintf("%s stage %s: %s, %s", op, name, phase, took),
			chromedp.WaitVisible(chromedp.Search(row+fmt.Sprintf(`/td[@data-label='Phase'][normalize-space(.)=%q]`, phase))),
			chromedp.WaitVisible(chromedp.Search(row+fmt.Sprintf(`/td[@data-label='Took'][normalize-space(.)=%q]`, took))))
	}
	stage(bootfixture.Failover, "database", "Succeeded", "42 s")
	stage(bootfixture.Failover, "web", "Succeeded", "26 s")
	stage(bootfixture.Failover, "remaining", "Succeeded", "4 s")
	stage(bootfixture.Test, "database", "TimedOut", "10 min")
	stage(bootfixture.Test, "web", "Skipped", "—")
	stage(bootfixture.Test, "remaining", "Skipped", "—")
	b.waitText(bootfixture.TimedOutMessage)
	b.waitText("The boot plan stopped at stage database (TimedOut)")
	b.waitText("Not started: apps/vm-01.")
	b.waitText("then run the test failover again")
	b.shotWhole("group-boot-plan")
	b.accessible("group with a boot plan")

	// The Operations page shows a request's stages in its details.
	b.run("open operations", chromedp.Click(chromedp.Search(`//nav//a[normalize-space(.)='Operations']`)),
		chromedp.WaitVisible(chromedp.Search(`//h1[normalize-space(.)='Operations']`)),
		chromedp.Click(chromedp.Search(fmt.Sprintf(`//tr[td[@data-label='Request'][normalize-space(.)=%q]]/td[contains(@class, 'pf-v6-c-table__toggle')]//button`, bootfixture.Failover))))
	stage(bootfixture.Failover, "web", "Succeeded", "26 s")
	b.shot("operations-boot-stages")
	b.accessible("operations with boot stages")
}
