package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/chartrender"
)

// testDrill runs `drill` as the chart's siterecovery-operator role on a
// quorum API server without controllers: the test plays the test-failover
// controller by writing the drills' statuses. A group with spec.drill is
// drilled from its template, one without from the flags; the TestFailover
// carries the drill label and the group as controller (what the drill
// controller counts); a test or failover of the group in progress refuses
// the drill; --wait ends 0 on a passed drill and 4 on a failed one.
func testDrill(t *testing.T, c client.Client, kubeconfig string) {
	ctx := t.Context()
	const ns = "dr-drill"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	operatorRole(t, c, ns)
	ref := srv1alpha1.SecretKeyReference{Name: "kc"}
	require.NoError(t, c.Create(ctx, &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone"},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
			{Name: "primary", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: ref},
			{Name: "dr", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: ref}}}}))
	newGroup := func(name string, d *srv1alpha1.DrillSchedule) *srv1alpha1.ProtectionGroup {
		pg := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "primary", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "zone"},
				VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: "apps", Name: name + "-vm"}}, Drill: d}}
		require.NoError(t, c.Create(ctx, pg))
		return pg
	}
	db := newGroup("db", &srv1alpha1.DrillSchedule{Schedule: "0 3 * * 0", Template: srv1alpha1.DrillTemplate{
		TargetCluster: "dr", TimeoutSeconds: 900, Checks: srv1alpha1.VerificationChecks{GuestAgent: true}}})
	web := newGroup("web", nil)
	t0 := time.Date(2026, 12, 6, 16, 30, 5, 0, time.UTC)
	drillNow = func() time.Time { return t0 }
	t.Cleanup(func() { drillNow = time.Now })
	run := cliRunner(t, kubeconfig, ns, "--as", "operator")
	get := func(name string) *srv1alpha1.TestFailover {
		tf := &srv1alpha1.TestFailover{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tf))
		return tf
	}

	code, out, errOut := run("drill", "db", "--dry-run=server", "-o", "name")
	require.Equal(t, ExitOK, code, errOut)
	assert.Equal(t, "testfailover.siterecovery.trilio.io/db-drill-manual-20261206163005\n", out)
	stored := &srv1alpha1.TestFailoverList{}
	require.NoError(t, c.List(ctx, stored, client.InNamespace(ns)))
	assert.Empty(t, stored.Items, "a dry run stores nothing")
	code, _, errOut = run("drill", "db", "--to", "dr", "--probe-port", "80")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, errOut, "ProtectionGroup db has spec.drill, and its drills run spec.drill.template; drop --to, --probe-port")

	// A group without a template: the flags, the zone's other cluster.
	code, out, errOut = run("drill", "web", "--probe-port", "5432", "--drill-timeout", "10m")
	require.Equal(t, ExitOK, code, errOut)
	assert.Equal(t, "testfailover.siterecovery.trilio.io/web-drill-manual-20261206163005 created\n", out)
	tf := get("web-drill-manual-20261206163005")
	assert.Equal(t, "web", tf.Labels[srv1alpha1.DrillLabel])
	assert.True(t, metav1.IsControlledBy(tf, web), "controlled by the group, as the drill controller's drills")
	assert.Equal(t, srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "web"}, TargetCluster: "dr",
		IsolatedNamespace: "sr-drill-web-manual-20261206163005", TimeoutSeconds: 600,
		Checks: srv1alpha1.VerificationChecks{VMReadyTimeoutSeconds: 300, Probe: &srv1alpha1.NetworkProbe{Type: srv1alpha1.ProbeTCP, Port: 5432, TimeoutSeconds: 60}}}, tf.Spec)

	t0 = t0.Add(time.Minute)
	code, _, errOut = run("drill", "web")
	assert.Equal(t, ExitError, code)
	assert.Contains(t, errOut, "not starting a drill of web: TestFailover web-drill-manual-20261206163005 of the group is in progress (phase New); wait for it to end")

	fr := &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-to-dr"},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "db"}, TargetCluster: "dr"}}
	require.NoError(t, c.Create(ctx, fr))
	code, _, errOut = run("drill", "db")
	assert.Equal(t, ExitError, code)
	assert.Contains(t, errOut, "not starting a drill of db: FailoverRequest db-to-dr of the group is in progress (phase New)")
	require.NoError(t, c.Delete(ctx, fr))

	// --wait: the test-failover controller's part is played here.
	done := finishDrill(ctx, c, ns, "db-drill-manual-20261206163105", srv1alpha1.TestFailoverFailed, "1 of 1 checks failed: db-vm GuestAgent")
	code, out, errOut = run("drill", "db", "--wait", "--timeout", "2m")
	require.NoError(t, <-done)
	assert.Equal(t, ExitRequestFailed, code, errOut)
	assert.Contains(t, out, "Checks of TestFailover db-drill-manual-20261206163105 (Failed)")
	assert.Contains(t, errOut, "drill dr-drill/db-drill-manual-20261206163105 failed: 1 of 1 checks failed: db-vm GuestAgent")
	tf = get("db-drill-manual-20261206163105")
	assert.True(t, metav1.IsControlledBy(tf, db))
	assert.Equal(t, int32(900), tf.Spec.TimeoutSeconds, "the template's")
	assert.True(t, tf.Spec.Checks.GuestAgent)

	done = finishDrill(ctx, c, ns, "web-drill-manual-20261206163005", srv1alpha1.TestFailoverSucceeded, "every check passed")
	require.NoError(t, <-done)
	t0 = t0.Add(time.Minute)
	done = finishDrill(ctx, c, ns, "web-drill-manual-20261206163205", srv1alpha1.TestFailoverSucceeded, "every check passed")
	code, _, errOut = run("drill", "web", "--wait", "--timeout", "2m")
	require.NoError(t, <-done)
	assert.Equal(t, ExitOK, code, errOut)
	assert.Contains(t, errOut, "drill dr-drill/web-drill-manual-20261206163205 passed")
}

// operatorRole binds the protectionzone chart's siterecovery-operator
// ClusterRole to user "operator" in ns.
func operatorRole(t *testing.T, c client.Client, ns string) {
	objs, err := chartrender.Render("protectionzone", ns)
	require.NoError(t, err)
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && o.GetName() == "siterecovery-operator" {
			require.NoError(t, c.Create(t.Context(), o))
		}
	}
	require.NoError(t, c.Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "siterecovery-operator"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "operator", APIGroup: "rbac.authorization.k8s.io"}}}))
}

// finishDrill waits for TestFailover ns/name to exist and ends it in phase,
// as the test-failover controller would; the channel gets the outcome.
func finishDrill(ctx context.Context, c client.Client, ns, name string, phase srv1alpha1.TestFailoverPhase, message string) <-chan error {
	done := make(chan error, 1)
	go func() {
		tf := &srv1alpha1.TestFailover{}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tf) == nil, nil
		})
		if err != nil {
			done <- fmt.Errorf("drill %s never created: %w", name, err)
			return
		}
		now := metav1.Now()
		tf.Status.Phase = phase
		tf.Status.CompletionTime = &now
		tf.Status.PhaseHistory = []srv1alpha1.PhaseTransition{{Phase: string(phase), Time: metav1.NowMicro(), Message: message}}
		tf.Status.Results = []srv1alpha1.CheckResult{{VM: "vm", Check: "VMReady", Passed: phase == srv1alpha1.TestFailoverSucceeded, Message: message}}
		done <- c.Status().Update(ctx, tf)
	}()
	return done
}
