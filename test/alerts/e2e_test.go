package alerts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/monitor"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/quorum/zone"
	"github.com/siterecovery/siterecovery/test/env"
)

// E2EEnv set to any value runs TestAlertsEndToEnd (make test-alerts-e2e): it
// builds prometheus, which takes longer than make test affords.
const E2EEnv = "SITERECOVERY_ALERTS_E2E"

const (
	e2eGroup = "web"
	// e2eObjective is the group's RPO objective in seconds.
	e2eObjective = 5
	vm           = "vm-00"
	e2eTimeout   = 2 * time.Minute
)

// noDataPanels are the dashboard panels that have no data in this zone, and
// why; the test fails when one of them has data, so the list stays true.
var noDataPanels = map[string]string{
	"Failover phase":                                   "no failover runs in this zone",
	"Failover phase durations p90":                     "no failover runs in this zone",
	"Failover and test failover results (30d)":         "no failover or test failover has finished in this zone",
	"Failover results (7d)":                            "no failover has finished in this zone",
	"Test failover results (7d)":                       "no test failover has finished in this zone",
	"Failover duration p90":                            "no failover has finished in this zone",
	"Sync cycle lag vs interval (VolSync, Offloaded)":  "the zone replicates with DRBD, not in cycles",
	"Sync cycle lag in intervals (VolSync, Offloaded)": "the zone replicates with DRBD, not in cycles",
	"Last complete sync":                               "the zone replicates with DRBD, not in cycles",
}

// TestAlertsEndToEnd drives a DRBD group's replication lag past its RPO
// objective on real API servers and sees SiteRecoveryRPOBreached firing in a
// real Prometheus, which scrapes the replication-monitor's secure metrics
// endpoint with a token as the chart's ServiceMonitor configures it and
// evaluates the chart's rules; it checks each dashboard panel's query, then
// reconnects the replica and sees the alert resolve.
func TestAlertsEndToEnd(t *testing.T) {
	if os.Getenv(E2EEnv) == "" {
		t.Skip("make test-alerts-e2e runs it (" + E2EEnv + "=1): it builds prometheus")
	}
	bin := filepath.Join(PrometheusDir(t, "prometheus"), "prometheus")
	ctx := context.Background()
	z := env.New(t, env.Options{})
	res := replicatedVM(t, z)

	metricsAddr, err := FreeAddr()
	require.NoError(t, err)
	startMonitor(t, z, metricsAddr)

	// The test's rules file is the chart's, rendered with the chart's own
	// values: only rpoBreachedFor is shortened (1m by default), so that the
	// alert fires within seconds of the breach.
	chart, err := Render(env.Namespace, map[string]any{"monitoring": map[string]any{"prometheusRule": map[string]any{"rpoBreachedFor": "2s"}}})
	require.NoError(t, err)
	token, err := ScraperToken(ctx, kubernetes.NewForConfigOrDie(z.Clusters[env.Quorum].Config))
	require.NoError(t, err)
	listen, err := FreeAddr()
	require.NoError(t, err)
	prom, api, err := Start(ctx, Config{Bin: bin, Dir: t.TempDir(), Listen: listen, RuleFiles: [][]byte{chart.Rules}, Token: token,
		Targets:        []Target{{Address: metricsAddr, Namespace: env.Namespace, Job: chart.Job}},
		ScrapeInterval: time.Second, EvalInterval: time.Second})
	require.NoError(t, err)
	t.Cleanup(prom.Stop)

	env.Eventually(t, e2eTimeout, "the metrics endpoint scraped up with the scraper's token", func() error {
		targets, err := api.Targets(ctx)
		if err != nil || len(targets) != 1 || targets[0].Health != "up" {
			return fmt.Errorf("targets %+v: %w", targets, err)
		}
		return hasData(ctx, api, fmt.Sprintf(`siterecovery_replication_group_lag_seconds{namespace=%q,job=%q,protection_group=%q} == 0`, env.Namespace, chart.Job, e2eGroup))
	})
	require.Empty(t, rpoAlerts(t, api), "no breach while in sync")

	require.NoError(t, z.DRBD(t).Disconnect(res))
	cut := time.Now()
	var fired Alert
	env.Eventually(t, e2eTimeout, "SiteRecoveryRPOBreached firing", func() error {
		for _, a := range rpoAlerts(t, api) {
			if a.State == "firing" {
				fired = a
				return nil
			}
		}
		return errors.New("not firing")
	})
	t.Logf("SiteRecoveryRPOBreached fired %s after the link was cut (objective %ds, for 2s, scrape and evaluation every 1s)",
		time.Since(cut).Round(100*time.Millisecond), e2eObjective)
	for k, v := range map[string]string{"namespace": env.Namespace, "job": chart.Job, "protection_group": e2eGroup, "severity": "critical"} {
		require.Equal(t, v, fired.Labels[k], "label %s of %+v", k, fired.Labels)
	}
	require.Equal(t, "Replication lag of protection group web exceeds its RPO objective", fired.Annotations["summary"])

	checkPanels(t, api, chart)

	require.NoError(t, z.DRBD(t).Connect(res))
	healed := time.Now()
	env.Eventually(t, e2eTimeout, "SiteRecoveryRPOBreached resolved", func() error {
		if a := rpoAlerts(t, api); len(a) > 0 {
			return fmt.Errorf("still %s", a[0].State)
		}
		return nil
	})
	t.Logf("SiteRecoveryRPOBreached resolved %s after the link was back", time.Since(healed).Round(100*time.Millisecond))
}

// checkPanels queries every dashboard panel's targets as Grafana would for
// this group: each panel has data, but those of noDataPanels, which have none.
func checkPanels(t *testing.T, api API, chart *Chart) {
	t.Helper()
	vars := map[string]string{"namespace": env.Namespace, "protection_group": e2eGroup}
	withData := 0
	for _, p := range chart.Panels {
		var empty, full []string
		for _, e := range p.Exprs {
			q := Query(e, vars)
			if err := hasData(context.Background(), api, q); err != nil {
				empty = append(empty, q+": "+err.Error())
			} else {
				full = append(full, q)
			}
		}
		name := p.Dashboard + ": " + p.Title
		if why, listed := noDataPanels[p.Title]; listed {
			require.Empty(t, full, "%s has data, but is listed without (%s)", name, why)
			continue
		}
		require.Empty(t, empty, "%s has no data", name)
		withData++
	}
	t.Logf("%d of %d dashboard panels have data; %d need a failover, a test failover or a group replicated in cycles",
		withData, len(chart.Panels), len(chart.Panels)-withData)
}

func hasData(ctx context.Context, api API, q string) error {
	s, err := api.Query(ctx, q)
	if err != nil {
		return err
	}
	if len(s) == 0 {
		return errors.New("no series")
	}
	return nil
}

func rpoAlerts(t *testing.T, api API) []Alert {
	t.Helper()
	all, err := api.Alerts(context.Background())
	require.NoError(t, err)
	var out []Alert
	for _, a := range all {
		if a.Labels["alertname"] == "SiteRecoveryRPOBreached" {
			out = append(out, a)
		}
	}
	return out
}

// replicatedVM replicates one VM's DRBD resource from the primary to the DR
// cluster through the simulator, in a protection group with a short RPO
// objective, and returns the resource's name.
func replicatedVM(t *testing.T, z *env.Env) string {
	t.Helper()
	ctx := context.Background()
	z.StartAgent(t, env.Primary)
	z.StartAgent(t, env.DR)
	fabric := z.DRBD(t)
	require.NoError(t, fabric.SetSyncRate(1<<30))
	z.CreateReplica(t, env.Primary, env.DRBDReplica(e2eGroup, vm, env.Primary, env.DR, 0, 7000))
	z.CreateReplica(t, env.DR, env.DRBDReplica(e2eGroup, vm, env.DR, env.Primary, 1, 7000))
	name := srv1alpha1.DRBDResourceName(vm)
	key := client.ObjectKey{Namespace: env.AppNS, Name: name}
	waitDRBD := func(what string, ok func(*srv1alpha1.DRBDResource) bool) {
		env.Eventually(t, e2eTimeout, vm+" "+what, func() error {
			r := &srv1alpha1.DRBDResource{}
			if err := z.Client(env.Primary).Get(ctx, key, r); err != nil || !ok(r) {
				return fmt.Errorf("status %+v: %w", r.Status, err)
			}
			return nil
		})
	}
	waitDRBD("connected", func(r *srv1alpha1.DRBDResource) bool { return r.Status.MetadataCreated && len(r.Status.Peers) == 1 })
	require.NoError(t, fabric.MarkUpToDate(name, env.Nodes[env.Primary].Name))
	r := &srv1alpha1.DRBDResource{}
	require.NoError(t, z.Client(env.Primary).Get(ctx, key, r))
	before := r.DeepCopy()
	r.Spec.Role = srv1alpha1.RolePrimary
	require.NoError(t, z.Client(env.Primary).Patch(ctx, r, client.MergeFrom(before)))
	waitDRBD("Primary and in sync", func(r *srv1alpha1.DRBDResource) bool {
		return r.Status.Role == "Primary" && len(r.Status.Peers) == 1 && len(r.Status.Peers[0].Volumes) == 1 &&
			r.Status.Peers[0].Volumes[0].PeerDiskState == "UpToDate"
	})
	require.NoError(t, z.Client(env.Quorum).Create(ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: e2eGroup},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{{Name: vm, Namespace: env.AppNS}},
			ActiveCluster: env.Primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName},
			Replication: srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: e2eObjective}},
	}))
	return name
}

// startMonitor runs quorum-manager's zone controller, cluster prober and
// replication-monitor, its metrics served at addr as quorum-manager serves
// them with --metrics-secure (internal/boot/metrics.go): HTTPS, each scraper's
// token reviewed and its GET /metrics authorized by the quorum API server. The
// group's status is re-evaluated every second, so the exported lag follows
// the link.
func startMonitor(t *testing.T, z *env.Env, addr string) {
	t.Helper()
	mgr, err := ctrl.NewManager(z.Clusters[env.Quorum].Config, ctrl.Options{
		Scheme:     z.Scheme,
		Metrics:    metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{env.Namespace: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:     z.Logger(t, "quorum-manager"),
	})
	require.NoError(t, err)
	rm := remote.NewManager(mgr.GetScheme(), ctrl.Log.WithName("remote"), remote.Options{})
	require.NoError(t, mgr.Add(&remote.Prober{Manager: rm, Interval: time.Second}))
	require.NoError(t, zone.SetupWithManager(mgr, rm))
	require.NoError(t, monitor.SetupWithOptions(mgr, rm, monitor.Options{}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	c := z.Client(env.Quorum)
	key := client.ObjectKey{Namespace: env.Namespace, Name: e2eGroup}
	env.Eventually(t, e2eTimeout, "the group's ReplicationGroupStatus polled every second", func() error {
		rgs := &srv1alpha1.ReplicationGroupStatus{}
		if err := c.Get(ctx, key, rgs); err != nil {
			return err
		}
		if rgs.Spec.PollingIntervalSeconds == 1 {
			return nil
		}
		before := rgs.DeepCopy()
		rgs.Spec.PollingIntervalSeconds = 1
		return c.Patch(ctx, rgs, client.MergeFrom(before))
	})
}
