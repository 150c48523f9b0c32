package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/console/ui"
	"github.com/siterecovery/siterecovery/test/harness"
)

// RequireBrowserEnv names the variable that, set, turns a missing chromium or
// an unbuilt front end into a failure instead of a skip (CI sets it).
const RequireBrowserEnv = "SITERECOVERY_REQUIRE_BROWSER"

// ScreenshotsEnv names the folder the screenshots go to; a new temporary
// folder when unset. Either way the test prints it.
const ScreenshotsEnv = "SITERECOVERY_CONSOLE_SCREENSHOTS"

// cspProbe records Content-Security-Policy violations in every document; it
// is installed through the DevTools protocol, which the CSP does not govern.
const cspProbe = `window.__csp = []; document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`

type browser struct {
	t    *testing.T
	ctx  context.Context
	url  string
	dir  string
	n    int
	axe  string
	seen []string
}

func chromium(t *testing.T) string {
	t.Helper()
	skip := func(why string) {
		if os.Getenv(RequireBrowserEnv) != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		skip("chromium is not installed (apt-get install chromium)")
	}
	if ui.FS() == nil {
		skip("the front end is not built (make console)")
	}
	return path
}

func newBrowser(t *testing.T, url string) *browser { return newBrowserWith(t, url) }

// newBrowserWith starts chromium with further options.
func newBrowserWith(t *testing.T, url string, extra ...chromedp.ExecAllocatorOption) *browser {
	exe := chromium(t)
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		var err error
		dir, err = os.MkdirTemp("", "siterecovery-console-screenshots-")
		require.NoError(t, err)
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Logf("console screenshots: %s", dir)
	axe, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "web/console/node_modules/axe-core/axe.min.js"))
	require.NoError(t, err, "axe-core comes from npm (make console)")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1440, 1600),
		// The console serves HTTPS with a certificate it made itself (see
		// serveHTTPS), and the OIDC issuer fixture with its own.
		chromedp.Flag("ignore-certificate-errors", true))
	opts = append(opts, extra...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, url: url, dir: dir, axe: string(axe)}
	// The first call starts the browser; it must not carry a deadline.
	_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspProbe})
	require.NoError(t, err)
	return b
}

// run runs actions with a deadline, failing the test with what was asked.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) waitText(text string) {
	b.t.Helper()
	b.run("wait for "+text, chromedp.WaitVisible(chromedp.Search(fmt.Sprintf(`//*[contains(normalize-space(.), %q) and not(*[contains(normalize-space(.), %q)])]`, text, text))))
}

func (b *browser) click(button string) {
	b.t.Helper()
	b.run("click "+button, chromedp.Click(chromedp.Search(fmt.Sprintf(`//button[normalize-space(.)=%q]`, button))))
}

func (b *browser) shot(name string) {
	b.t.Helper()
	b.n++
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(b.dir, fmt.Sprintf("%02d-%s.png", b.n, name))
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
	b.seen = append(b.seen, path)
}

// shotWhole photographs a page longer than the window: the page scrolls
// inside its main container, so the window is made as tall as the content
// for the shot, then restored.
func (b *browser) shotWhole(name string) {
	b.t.Helper()
	h := eval[int](b, "page height", `Math.ceil(document.getElementById('main').scrollHeight) + 120`)
	b.run("grow the window", chromedp.EmulateViewport(1440, int64(max(h, 1600))))
	b.shot(name)
	b.run("restore the window", chromedp.EmulateReset())
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, what, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

type violation struct {
	ID, Impact, Help string
	Nodes            []string
}

// accessible runs axe-core on the page and fails on serious or critical
// violations, and on any CSP violation the page has seen.
func (b *browser) accessible(screen string) {
	b.t.Helper()
	script := b.axe + `; axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(
	  r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
	   .map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))}))))`
	out := eval[string](b, "axe on "+screen, script, chromedp.EvalAwaitPromise)
	var vs []violation
	require.NoError(b.t, json.Unmarshal([]byte(out), &vs))
	for _, v := range vs {
		b.t.Errorf("%s: axe %s (%s): %s at %v", screen, v.ID, v.Impact, v.Help, v.Nodes)
	}
	csp := eval[[]string](b, "read CSP violations", `window.__csp || []`)
	require.Empty(b.t, csp, "%s: Content-Security-Policy violations", screen)
}

func (b *browser) signIn(token string) {
	b.t.Helper()
	b.run("sign in",
		chromedp.Navigate(b.url+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token),
		// SetValue bypasses React's change tracking; one typed key updates it.
		chromedp.SendKeys(chromedp.ID("token"), " "),
		chromedp.Click(chromedp.Search(`//button[normalize-space(.)='Sign in']`)),
		chromedp.WaitVisible(chromedp.Search(`//h1[normalize-space(.)='Overview']`)),
	)
}

func (b *browser) openGroup() {
	b.t.Helper()
	b.run("open the group",
		chromedp.Click(chromedp.Search(fmt.Sprintf(`//button[normalize-space(.)=%q]`, group))),
		chromedp.WaitVisible(chromedp.Search(fmt.Sprintf(`//h1[starts-with(normalize-space(.), %q)]`, "Group "+group))),
	)
}

// TestConsoleInBrowser signs in as a viewer and an operator and goes through
// every screen: the viewer sees the groups and is refused a failover; the
// operator fails over with the timeline followed live to Completed, sees the
// unplanned confirmation, runs a test failover, protects a VM and reads the
// operations. Each screen is photographed and scanned with axe-core, in the
// light and the dark theme; finally the overview of 100 groups and 1,000 VMs
// is timed.
func TestConsoleInBrowser(t *testing.T) {
	z := newZone(t, 2)
	b := newBrowser(t, z.url)
	defer func() { t.Logf("screenshots:\n  %s", strings.Join(b.seen, "\n  ")) }()

	b.run("open the console", chromedp.Navigate(z.url+"/"), chromedp.WaitVisible(chromedp.ID("token")))
	b.shot("login")
	b.accessible("login")

	// The viewer sees the group, and the console says plainly it may not fail over.
	b.signIn(z.tokens["viewer"])
	b.waitText(group)
	b.shot("overview-viewer")
	b.accessible("overview")
	b.openGroup()
	b.waitText("Virtual machines and replication")
	b.waitText("Lag over the last 6 hours")
	b.run("the lag chart is drawn", chromedp.WaitVisible(chromedp.Search(`//figure[@aria-label='Lag history']//*[local-name()='svg'][starts-with(@aria-label, 'Largest lag over the last 6 hours')]`)))
	b.shot("group-viewer")
	b.accessible("group")
	b.click("Planned failover")
	b.waitText("Failover lock")
	// The viewer may not read the zone's kubeconfig Secrets: the console does
	// not read the target for it, and says so.
	b.waitText("not checked: dr-cluster is read through the kubeconfig Secret")
	b.shot("viewer-preflight")
	b.click("Start planned failover")
	b.waitText("Failover: you may not")
	b.shot("viewer-failover-denied")
	b.click("Cancel")
	b.click("Sign out")
	b.run("signed out", chromedp.WaitVisible(chromedp.ID("token")))

	// The operator's planned failover, followed live to Completed.
	b.signIn(z.tokens["operator"])
	b.openGroup()
	b.click("Planned failover")
	b.waitText("Failover lock")
	// The operator may read them: the target's replica nodes were read.
	b.waitText("no node of dr-cluster that holds this group's replicas carries")
	b.shot("planned-failover-preflight")
	b.accessible("planned failover preflight")
	b.click("Start planned failover")
	// The page is not reloaded: the request, its phases and Completed arrive
	// through the event stream. A failover of two VMs may finish within a
	// second, so the running state is photographed but not waited for.
	b.shot("planned-failover-started")
	b.run("the timeline reaches Completed",
		chromedp.WaitVisible(chromedp.Search(`//h3[starts-with(normalize-space(.), 'FailoverRequest')]//*[normalize-space(.)='Completed']`)))
	b.shot("planned-failover-completed")
	b.waitText("dr-cluster active")
	// Each VM's state on each site, from the quorum-side status: the VMs
	// now run on the DR cluster, their standbys on the primary are stopped.
	for _, vm := range []string{"apps/vm-00", "apps/vm-01"} {
		row := fmt.Sprintf(`//table[@aria-label='Virtual machines']//tr[td[1][normalize-space(.)=%q]]`, vm)
		b.run(vm+" runs on the DR cluster", chromedp.WaitVisible(chromedp.Search(row+`/td[2][normalize-space(.)='dr-cluster']`)),
			chromedp.WaitVisible(chromedp.Search(row+`/td[@data-label='On primary-cluster'][normalize-space(.)='Stopped']`)),
			chromedp.WaitVisible(chromedp.Search(row+`/td[@data-label='On dr-cluster'][normalize-space(.)='Running']`)))
	}

	// The unplanned failover's data-loss window and typed confirmation.
	b.click("Unplanned failover")
	b.waitText("Data may be lost")
	b.run("type a wrong name", chromedp.SendKeys(chromedp.ID("failover-confirm"), "production"))
	disabled := eval[bool](b, "the button stays disabled", `[...document.querySelectorAll('button')].find(b => b.textContent.trim() === 'Fail over now').disabled`)
	require.True(t, disabled, "an unplanned failover must not start before the group's name is typed")
	b.shot("unplanned-failover-confirm")
	b.accessible("unplanned failover")
	b.click("Cancel")

	// A test failover: the group shows the badge and the running operation.
	b.click("Test failover")
	b.waitText("Start test failover")
	b.shot("test-failover-start")
	b.click("Start test failover")
	b.waitText("test active")
	b.shot("test-failover-running")
	// Snapshots of the primary's replicas (the group now runs on the DR
	// cluster) boot in an isolated namespace, pass their checks, and are
	// cleaned up: the operation reaches Succeeded live and the badge goes.
	b.run("the test failover reaches Succeeded",
		chromedp.WaitVisible(chromedp.Search(`//h3[starts-with(normalize-space(.), 'TestFailover')]//*[normalize-space(.)='Succeeded']`)),
		chromedp.WaitNotPresent(chromedp.Search(`//h1//*[normalize-space(.)='test active']`)))
	b.waitText("passed: vm-00 VMReady")
	b.shot("test-failover-succeeded")

	// Protect a VM: a refusal inline, then a request followed through its phases.
	b.run("open the protect form", chromedp.Click(chromedp.Search(`//nav//a[normalize-space(.)='Protect a VM']`)),
		chromedp.WaitVisible(chromedp.ID("protect-vm")))
	// The operator may read the primary: its VMs are listed, the protected
	// ones marked with their group.
	b.run("the primary's VMs are listed",
		chromedp.WaitReady(chromedp.Search(`//select[@id='protect-pick']/option[normalize-space(.)='apps/web-01']`)),
		chromedp.WaitReady(chromedp.Search(fmt.Sprintf(`//select[@id='protect-pick']/option[normalize-space(.)='apps/vm-00 (in %s)']`, group))))
	b.waitText("not protected yet")
	b.shot("protect-form")
	b.run("fill the form",
		chromedp.SendKeys(chromedp.ID("protect-group"), "web"),
		chromedp.SendKeys(chromedp.ID("protect-vmns"), "apps"),
		chromedp.SendKeys(chromedp.ID("protect-vm"), "Web_01"))
	b.click("Protect")
	b.waitText("Protection request refused")
	b.shot("protect-refused")
	b.run("correct the name", chromedp.SendKeys(chromedp.ID("protect-vm"), strings.Repeat("\b", len("Web_01"))+"web-01"))
	b.click("Protect")
	b.run("the request's phases appear",
		chromedp.WaitVisible(chromedp.Search(`//section[@aria-label='Protection progress']//ol[contains(@aria-label, 'Phases of')]`)))
	b.shot("protect-following")
	b.run("the VM is protected",
		chromedp.WaitVisible(chromedp.Search(`//section[@aria-label='Protection progress']//h2//*[normalize-space(.)='Protected']`)))
	b.shot("protect-protected")
	b.accessible("protect")

	// Operations: every request with its phases and safety checks.
	b.run("open operations", chromedp.Click(chromedp.Search(`//nav//a[normalize-space(.)='Operations']`)),
		chromedp.WaitVisible(chromedp.Search(`//h1[normalize-space(.)='Operations']`)),
		chromedp.Click(chromedp.Search(`(//td[contains(@class, 'pf-v6-c-table__toggle')]//button)[1]`)))
	b.waitText("lock: acquired")
	b.shot("operations")
	b.accessible("operations")

	// The dark theme.
	b.click("Dark")
	b.run("overview in the dark", chromedp.Click(chromedp.Search(`//nav//a[normalize-space(.)='Overview']`)),
		chromedp.WaitVisible(chromedp.Search(`//h1[normalize-space(.)='Overview']`)))
	b.waitText(group)
	b.shot("overview-dark")
	b.accessible("overview, dark")
	b.openGroup()
	b.shot("group-dark")
	b.accessible("group, dark")
	b.click("Light")

	// The overview of 100 groups of 10 VMs, timed from navigation to the
	// first render with the data, then paged through.
	z.seedScale(100, 10)
	b.run("render 100 groups", chromedp.Navigate(z.url+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-overview-rendered]`)))
	b.logRenderTime()
	b.shotWhole("overview-100-groups")
	b.accessible("overview, 100 groups")
	b.pageThroughScale(100)
	b.shotWhole("overview-100-groups-last-page")
}

// logRenderTime prints how long the overview took to render and paint, and
// where the time went. It is a figure to report, not an assertion: the
// machine's load decides too much of it.
func (b *browser) logRenderTime() {
	b.t.Helper()
	rendered := eval[float64](b, "render time", `performance.getEntriesByName('overview-rendered')[0].startTime`)
	painted := eval[float64](b, "paint time", `performance.getEntriesByName('overview-painted')[0].startTime`)
	counts := eval[[]int](b, "counts", `fetch('/api/overview').then(r => r.json()).then(o => [o.summary.groups, o.summary.protectedVMs])`, chromedp.EvalAwaitPromise)
	load, _ := os.ReadFile("/proc/loadavg")
	b.t.Logf("overview of %d groups and %d VMs: rendered %.0f ms, painted %.0f ms after navigation (load average %s)",
		counts[0], counts[1], rendered, painted, strings.Join(strings.Fields(string(load))[:3], " "))
	b.t.Logf("where the time goes (ms after navigation): %s", eval[string](b, "timing breakdown", `(() => {
	  const n = performance.getEntriesByType('navigation')[0];
	  const parts = ['document ' + n.responseEnd.toFixed(0), 'DOMContentLoaded ' + n.domContentLoadedEventEnd.toFixed(0)];
	  for (const r of performance.getEntriesByType('resource')) {
	    const u = new URL(r.name);
	    if (u.pathname.startsWith('/api/') || /\.(js|css)$/.test(u.pathname))
	      parts.push(u.pathname.replace(/^.*\/assets\//, '') + ' ' + r.startTime.toFixed(0) + '-' + r.responseEnd.toFixed(0));
	  }
	  return parts.join(', ');
	})()`))
}

// pageThroughScale pages through the scale namespace's groups, 20 at a time:
// every group is seen exactly once, and no group at risk comes after one
// that is not.
func (b *browser) pageThroughScale(groups int) {
	b.t.Helper()
	section := fmt.Sprintf(`//section[@aria-labelledby='ns-%s']`, scaleNamespace)
	rows := fmt.Sprintf(`[...document.querySelectorAll('table[aria-label="Protection groups of %s"] tbody tr')].map(tr =>
	  tr.querySelector('td[data-label="Group"] button').textContent + (tr.querySelector('td[data-label="Group"]').textContent.includes('at risk') ? ' !' : ''))`, scaleNamespace)
	seen := map[string]bool{}
	healthySeen := false
	pages := (groups + 19) / 20
	for p := 1; p <= pages; p++ {
		first, last := (p-1)*20+1, min(p*20, groups)
		if p > 1 {
			b.run(fmt.Sprintf("go to page %d", p), chromedp.Click(chromedp.Search(section+`//button[@aria-label='Go to next page']`)))
		}
		b.run(fmt.Sprintf("page %d shows groups %d–%d", p, first, last), chromedp.WaitVisible(chromedp.Search(
			fmt.Sprintf(`%s//span[starts-with(normalize-space(.), %q)]`, section, fmt.Sprintf("Groups %d–%d of %d", first, last, groups)))))
		names := eval[[]string](b, "the rows of page "+fmt.Sprint(p), rows)
		require.Len(b.t, names, last-first+1, "page %d", p)
		for _, n := range names {
			name, atRisk := strings.CutSuffix(n, " !")
			require.False(b.t, seen[name], "group %s is on two pages", name)
			seen[name] = true
			require.False(b.t, atRisk && healthySeen, "group %s is at risk but comes after a group that is not (page %d)", name, p)
			healthySeen = healthySeen || !atRisk
		}
	}
	require.Len(b.t, seen, groups, "every group is on a page")
	disabled := eval[bool](b, "the last page has no next", fmt.Sprintf(`document.evaluate(%q, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue.disabled`,
		section+`//button[@aria-label='Go to next page']`))
	require.True(b.t, disabled, "the last page offers no next page")
}
