package env

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/test/chartrender"
	"github.com/siterecovery/siterecovery/test/harness"
)

// WebhookRotation tunes certificate rotation for tests that watch it.
type WebhookRotation struct {
	CertDuration, Lookahead, RotationCheck time.Duration
}

// InstallWebhooks creates the chart's ValidatingWebhookConfigurations on a
// cluster of the zone as the chart renders them for the DR namespace, except that
// each webhook calls a server of this test process at https://localhost:<port>
// instead of the chart's Service, and the empty certificate Secret the chart
// creates. It returns the options of that server: self-managed certificates, as
// the chart's default, whose CA the server injects into the configurations.
// The workload chart is rendered with WorkloadValues.
func (e *Env) InstallWebhooks(t testing.TB, cluster, chart string, rot WebhookRotation) boot.WebhookOptions {
	t.Helper()
	var values map[string]any
	if chart == "workload-control-plane" {
		values = WorkloadValues()
	}
	return e.InstallWebhooksValues(t, cluster, chart, values, rot)
}

// InstallWebhooksValues is InstallWebhooks with the chart rendered with values.
func (e *Env) InstallWebhooksValues(t testing.TB, cluster, chart string, values map[string]any, rot WebhookRotation) boot.WebhookOptions {
	t.Helper()
	return e.installWebhooks(t, cluster, chart, Namespace, values, rot)
}

// installWebhooks is InstallWebhooks for the chart installed in namespace,
// which it creates if needed, rendered with values.
func (e *Env) installWebhooks(t testing.TB, cluster, chart, namespace string, values map[string]any, rot WebhookRotation) boot.WebhookOptions {
	t.Helper()
	port := freePort(t)
	o := boot.WebhookOptions{
		Port: port, Host: "127.0.0.1", CertDir: t.TempDir(), CertManagement: boot.CertsSelf,
		SecretNamespace: namespace, DNSName: "localhost", RotatorName: fmt.Sprintf("webhook-certs-%d", rotators.Add(1)),
		CertDuration: rot.CertDuration, Lookahead: rot.Lookahead, RotationCheck: rot.RotationCheck,
	}
	w, err := chartrender.LocalWebhooks(renderChartValues(t, chart, namespace, values), port)
	require.NoError(t, err, "chart %s", chart)
	ctx := context.Background()
	c := e.Client(cluster)
	ensureNamespace(t, c, namespace)
	for _, cfg := range w.Configurations {
		require.NoError(t, c.Create(ctx, cfg))
		o.Configurations = append(o.Configurations, cfg.Name)
		t.Cleanup(func() { _ = c.Delete(context.Background(), cfg) })
	}
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: w.CertSecret}}))
	o.SecretName = w.CertSecret
	return o
}

// rotators numbers the certificate rotators of this test process.
var rotators atomic.Int32

func freePort(t testing.TB) int {
	t.Helper()
	port, err := harness.FreePort()
	require.NoError(t, err)
	return port
}

// InstallClusterRoles creates the ClusterRoles a chart renders on a cluster of
// the zone, e.g. the user roles of the protectionzone chart.
func (e *Env) InstallClusterRoles(t testing.TB, cluster, chart string) {
	t.Helper()
	for _, obj := range renderChart(t, chart, Namespace) {
		if obj.GetKind() == "ClusterRole" {
			createOrKeep(t, e.Client(cluster), obj)
		}
	}
}

// InstallConfirmationPolicy creates the protectionzone chart's admission policy
// (the confirmation and disaster-operator right of unplanned and forced
// failovers, evaluated by the API server itself) on the quorum cluster.
func (e *Env) InstallConfirmationPolicy(t testing.TB) {
	t.Helper()
	for _, obj := range chartrender.AdmissionPolicies(renderChart(t, "protectionzone", ZoneWebhookNamespace)) {
		require.NoError(t, e.Client(Quorum).Create(context.Background(), obj), "%s %s", obj.GetKind(), obj.GetName())
	}
	// The API server applies a new policy once its informer has it.
	probe := &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "policy-probe"},
		Spec: srv1alpha1.FailoverRequestSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "policy-probe"},
			TargetCluster: DR, FailoverType: srv1alpha1.FailoverUnplanned},
	}
	Eventually(t, 30*time.Second, "the confirmation policy is in force", func() error {
		err := e.Client(Quorum).Create(context.Background(), probe.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return nil
		}
		if err == nil {
			return errors.New("not yet: the probe was admitted")
		}
		return fmt.Errorf("not yet: %w", err)
	})
}
