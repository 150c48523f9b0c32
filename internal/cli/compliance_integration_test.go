package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestReportOnAPIServer writes a group's RPOEvents, drills and failover
// requests, with their statuses, to a real quorum API server and checks the
// figures report prints from them: the report's clock is pinned ten hours
// after the group's creation (set by the server), so the window holds one
// resolved hour of breach and one active hour.
func TestReportOnAPIServer(t *testing.T) {
	zone := harness.Start(t, harness.Options{Scheme: scheme.New()}, harness.Quorum)
	q := zone.Clusters[harness.Quorum]
	ctx := t.Context()
	const ns = "dr-report"
	require.NoError(t, q.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	pg := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "primary", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "zone"},
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: "db-vm"}}}}
	pg.Spec.Replication.RPOObjectiveSeconds = 120
	require.NoError(t, q.Client.Create(ctx, pg))
	c0 := pg.CreationTimestamp.Time
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(c0.Add(d)) }
	atp := func(d time.Duration) *metav1.Time { t := at(d); return &t }

	episode := func(name string, start time.Duration, end *metav1.Time, peak int64) {
		ev := &srv1alpha1.RPOEvent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: srv1alpha1.RPOEventSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "db"}, RPOObjectiveSeconds: 120, StartTime: at(start)}}
		require.NoError(t, q.Client.Create(ctx, ev))
		ev.Status = srv1alpha1.RPOEventStatus{State: srv1alpha1.RPOEventActive, PeakLagSeconds: peak}
		if end != nil {
			ev.Status.State, ev.Status.EndTime = srv1alpha1.RPOEventResolved, end
		}
		require.NoError(t, q.Client.Status().Update(ctx, ev))
	}
	episode("db-before", -3*time.Hour, atp(-2*time.Hour), 9000) // before the group: outside what is measured
	episode("db-1", time.Hour, atp(2*time.Hour), 900)
	episode("db-2", 9*time.Hour, nil, 1200)

	drill := func(name string, scheduled bool, start time.Duration, phase srv1alpha1.TestFailoverPhase, results ...srv1alpha1.CheckResult) {
		tf := &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "db"}, TargetCluster: "dr"}}
		if scheduled {
			tf.Labels = map[string]string{srv1alpha1.DrillLabel: "db"}
		}
		require.NoError(t, q.Client.Create(ctx, tf))
		tf.Status = srv1alpha1.TestFailoverStatus{Phase: phase, StartTime: atp(start), CompletionTime: atp(start + 5*time.Minute), Results: results}
		require.NoError(t, q.Client.Status().Update(ctx, tf))
	}
	check := func(check string, passed bool, d time.Duration) srv1alpha1.CheckResult {
		return srv1alpha1.CheckResult{VM: "db-vm", Check: check, Passed: passed, Message: check + " verdict", Time: atp(d)}
	}
	drill("db-drill-1", true, 3*time.Hour, srv1alpha1.TestFailoverSucceeded,
		check("VMReady", true, 3*time.Hour+40*time.Second), check("Probe", true, 3*time.Hour+95*time.Second))
	drill("db-manual", false, 6*time.Hour, srv1alpha1.TestFailoverFailed,
		check("VMReady", true, 6*time.Hour+30*time.Second), check("Probe", false, 6*time.Hour+90*time.Second))

	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-to-dr"},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "db"}, TargetCluster: "dr",
			FailoverType: srv1alpha1.FailoverPlanned}}
	require.NoError(t, q.Client.Create(ctx, fr))
	phase := func(p srv1alpha1.FailoverPhase, d time.Duration) srv1alpha1.PhaseTransition {
		return srv1alpha1.PhaseTransition{Phase: string(p), Time: metav1.NewMicroTime(c0.Add(d))}
	}
	fr.Status = srv1alpha1.FailoverRequestStatus{Phase: srv1alpha1.FailoverCompleted, CompletionTime: atp(4*time.Hour + 48*time.Second),
		PhaseHistory: []srv1alpha1.PhaseTransition{phase(srv1alpha1.FailoverPending, 4*time.Hour),
			phase(srv1alpha1.FailoverStoppingOnSource, 4*time.Hour+500*time.Millisecond),
			phase(srv1alpha1.FailoverStartingOnTarget, 4*time.Hour+12*time.Second),
			phase(srv1alpha1.FailoverCompleted, 4*time.Hour+47125*time.Millisecond)}}
	require.NoError(t, q.Client.Status().Update(ctx, fr))

	reportNow = func() time.Time { return c0.Add(10 * time.Hour) }
	t.Cleanup(func() { reportNow = time.Now })
	kubeconfig := filepath.Join(t.TempDir(), "quorum.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, q.Kubeconfig, 0o600))
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		o := &Options{Flags: genericclioptions.NewConfigFlags(true), IOStreams: genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}}
		root := newRootCommand(o)
		root.SetArgs(append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...))
		err := root.ExecuteContext(context.Background())
		if err != nil {
			errOut.WriteString("error: " + err.Error() + "\n")
		}
		t.Logf("kubectl siterecovery %v -> %d\n%s%s", args, Code(err), out.String(), errOut.String())
		return Code(err), out.String(), errOut.String()
	}

	code, out, errOut := run("report", "--window", "24h", "-o", "json")
	require.Equal(t, ExitOK, code, errOut)
	var rep ComplianceReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, "ComplianceReport", rep.Kind)
	require.Len(t, rep.Namespaces, 1)
	require.Len(t, rep.Namespaces[0].Groups, 1)
	g := rep.Namespaces[0].Groups[0]
	// Measured from the group's creation to now: 10h, of which 2h breached.
	assert.Equal(t, 36000.0, g.RPO.MeasuredSeconds)
	assert.Equal(t, 7200.0, g.RPO.BreachSeconds)
	require.NotNil(t, g.RPO.MetRatio)
	assert.InDelta(t, 0.8, *g.RPO.MetRatio, 1e-9)
	assert.Equal(t, 2, g.RPO.Episodes)
	assert.Equal(t, int32(120), g.RPO.ObjectiveSeconds)
	require.NotNil(t, g.RPO.Worst)
	assert.Equal(t, "db-2", g.RPO.Worst.Name)
	assert.True(t, g.RPO.Worst.Active)
	assert.Equal(t, 3600.0, g.RPO.Worst.DurationSeconds)
	assert.Contains(t, g.RPO.Note, "measured from its creation")
	require.NotNil(t, g.LastDrill)
	assert.Equal(t, "db-manual", g.LastDrill.Name)
	assert.False(t, g.LastDrill.Scheduled)
	assert.Equal(t, "Failed", g.LastDrill.Phase)
	assert.Nil(t, g.LastDrill.RTOSeconds)
	require.Len(t, g.LastDrill.Checks, 2)
	assert.False(t, g.LastDrill.Checks[1].Passed)
	require.NotNil(t, g.LastSuccessfulDrillTime)
	assert.True(t, g.LastSuccessfulDrillTime.Time.Equal(c0.Add(3*time.Hour+5*time.Minute)), "%v", g.LastSuccessfulDrillTime)
	require.NotNil(t, g.LastFailover)
	require.NotNil(t, g.LastFailover.RTOSeconds)
	assert.Equal(t, 47.125, *g.LastFailover.RTOSeconds)

	code, out, errOut = run("report", "db", "--window", "24h")
	require.Equal(t, ExitOK, code, errOut)
	for _, want := range []string{"80.000%", "2h0m0s", "db-2 peak 1200s", "active, for 1h0m0s", "db-manual (manual)", "Failed",
		"db-to-dr Completed", "47.1s", "Probe", "failed", "note: db: drill db-manual: no RTO: a check failed"} {
		assert.Contains(t, out, want)
	}

	// The scheduled drill's RTO shows once the failed manual one is gone.
	require.NoError(t, q.Client.Delete(ctx, &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-manual"}}))
	code, out, errOut = run("report", "-o", "yaml", "--window", "1h")
	require.Equal(t, ExitOK, code, errOut)
	var y ComplianceReport
	require.NoError(t, yaml.Unmarshal([]byte(out), &y))
	g = y.Namespaces[0].Groups[0]
	assert.Equal(t, "1h", y.Window)
	require.NotNil(t, g.LastDrill.RTOSeconds)
	assert.Equal(t, 95.0, *g.LastDrill.RTOSeconds)
	assert.True(t, g.LastDrill.Scheduled)
	// The last hour is all inside the active episode.
	assert.InDelta(t, 0.0, *g.RPO.MetRatio, 1e-9)

	code, _, errOut = run("report", "--window", "a week")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, errOut, "--window \"a week\"")
	code, _, errOut = run("report", "nosuch")
	assert.Equal(t, ExitError, code)
	assert.Contains(t, errOut, `no ProtectionGroup "nosuch"`)
}
