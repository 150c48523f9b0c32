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
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/report"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/compliancefixture"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestQuorumOnlyCommands runs the commands that need only the quorum API
// server on one: report and drill, each in its own DR namespace.
func TestQuorumOnlyCommands(t *testing.T) {
	zone := harness.Start(t, harness.Options{Scheme: scheme.New()}, harness.Quorum)
	q := zone.Clusters[harness.Quorum]
	kubeconfig := filepath.Join(t.TempDir(), "quorum.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, q.Kubeconfig, 0o600))
	t.Run("report", func(t *testing.T) { testReport(t, q.Client, kubeconfig) })
	t.Run("drill", func(t *testing.T) { testDrill(t, q.Client, kubeconfig) })
}

// cliRunner runs kubectl siterecovery in namespace ns against kubeconfig,
// with extra global flags (--as), and returns its exit code and output.
func cliRunner(t *testing.T, kubeconfig, ns string, global ...string) func(args ...string) (int, string, string) {
	return func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		o := &Options{Flags: genericclioptions.NewConfigFlags(true), IOStreams: genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}}
		root := newRootCommand(o)
		root.SetArgs(append(append([]string{"--kubeconfig", kubeconfig, "-n", ns}, global...), args...))
		err := root.ExecuteContext(context.Background())
		if err != nil {
			errOut.WriteString("error: " + err.Error() + "\n")
		}
		t.Logf("kubectl siterecovery %v -> %d\n%s%s", args, Code(err), out.String(), errOut.String())
		return Code(err), out.String(), errOut.String()
	}
}

// testReport reads the figures report prints from a group's RPOEvents,
// drills, failover request and DRPC (test/compliancefixture): the report's
// clock is pinned ten hours after the group's creation (set by the server),
// so the window holds one resolved hour of breach and one active hour. The
// DRPC's relocate, after the request, is the last failover; a user who may
// not list DRPCs gets the request's, and a note.
func testReport(t *testing.T, c client.Client, kubeconfig string) {
	ctx := t.Context()
	const ns = "dr-report"
	pg, err := compliancefixture.Write(ctx, c, ns, compliancefixture.Options{DRPC: true})
	require.NoError(t, err)
	c0 := pg.CreationTimestamp.Time
	reportNow = func() time.Time { return c0.Add(compliancefixture.Now) }
	t.Cleanup(func() { reportNow = time.Now })
	run := cliRunner(t, kubeconfig, ns)

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
	assert.InDelta(t, compliancefixture.MetRatio, *g.RPO.MetRatio, 1e-9)
	assert.Equal(t, 2, g.RPO.Episodes)
	assert.Equal(t, int32(compliancefixture.ObjectiveSeconds), g.RPO.ObjectiveSeconds)
	require.NotNil(t, g.RPO.Worst)
	assert.Equal(t, compliancefixture.Worst, g.RPO.Worst.Name)
	assert.True(t, g.RPO.Worst.Active)
	assert.Equal(t, 3600.0, g.RPO.Worst.DurationSeconds)
	assert.Contains(t, g.RPO.Note, "measured from its creation")
	require.NotNil(t, g.LastDrill)
	assert.Equal(t, compliancefixture.ManualTest, g.LastDrill.Name)
	assert.False(t, g.LastDrill.Scheduled)
	assert.Equal(t, "Failed", g.LastDrill.Phase)
	assert.Nil(t, g.LastDrill.RTOSeconds)
	require.Len(t, g.LastDrill.Checks, 2)
	assert.False(t, g.LastDrill.Checks[1].Passed)
	require.NotNil(t, g.LastSuccessfulDrillTime)
	assert.True(t, g.LastSuccessfulDrillTime.Time.Equal(c0.Add(compliancefixture.ScheduledEnd)), "%v", g.LastSuccessfulDrillTime)
	require.NotNil(t, g.LastFailover)
	assert.Equal(t, compliancefixture.DRPC, g.LastFailover.Name)
	assert.Equal(t, report.KindDRPlacementControl, g.LastFailover.Kind)
	assert.Equal(t, "primary", g.LastFailover.TargetCluster)
	require.NotNil(t, g.LastFailover.RTOSeconds)
	assert.Equal(t, compliancefixture.DRPCRTOSeconds, *g.LastFailover.RTOSeconds)
	assert.Empty(t, rep.Namespaces[0].Notes)

	code, out, errOut = run("report", "db", "--window", "24h")
	require.Equal(t, ExitOK, code, errOut)
	for _, want := range []string{"80.000%", "2h0m0s", "db-2 peak 1200s", "active, for 1h0m0s", "db-manual (manual)", "Failed",
		"db-drpc Completed (DRPC Relocate)", "1m2s", "Probe", "failed", "note: db: drill db-manual: no RTO: a check failed"} {
		assert.Contains(t, out, want)
	}

	// A user who may list everything else but DRPCs gets the request's RTO
	// and a note that DRPCs are left out.
	require.NoError(t, c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report-no-drpc"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Verbs: []string{"list"},
			Resources: []string{"protectiongroups", "rpoevents", "testfailovers", "failoverrequests"}}}}))
	require.NoError(t, c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report-no-drpc"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "report-no-drpc"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "auditor", APIGroup: rbacv1.GroupName}}}))
	code, out, errOut = cliRunner(t, kubeconfig, ns, "--as", "auditor")("report", "--window", "24h", "-o", "json")
	require.Equal(t, ExitOK, code, errOut)
	rep = ComplianceReport{}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	g = rep.Namespaces[0].Groups[0]
	require.NotNil(t, g.LastFailover)
	assert.Equal(t, compliancefixture.Failover, g.LastFailover.Name)
	require.NotNil(t, g.LastFailover.RTOSeconds)
	assert.Equal(t, compliancefixture.FailoverRTOSeconds, *g.LastFailover.RTOSeconds)
	assert.Equal(t, []string{report.DRPCsHiddenNote}, rep.Namespaces[0].Notes)
	code, out, errOut = cliRunner(t, kubeconfig, ns, "--as", "auditor")("report", "--window", "24h")
	require.Equal(t, ExitOK, code, errOut)
	assert.Contains(t, out, "db-to-dr Completed")
	assert.Contains(t, out, "note: "+report.DRPCsHiddenNote)

	// The scheduled drill's RTO shows once the failed manual one is gone.
	require.NoError(t, c.Delete(ctx, &srv1alpha1.TestFailover{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: compliancefixture.ManualTest}}))
	code, out, errOut = run("report", "-o", "yaml", "--window", "1h")
	require.Equal(t, ExitOK, code, errOut)
	var y ComplianceReport
	require.NoError(t, yaml.Unmarshal([]byte(out), &y))
	g = y.Namespaces[0].Groups[0]
	assert.Equal(t, "1h", y.Window)
	require.NotNil(t, g.LastDrill.RTOSeconds)
	assert.Equal(t, compliancefixture.ScheduledRTOSeconds, *g.LastDrill.RTOSeconds)
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
