package env

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/chartrender"
)

// ZoneWebhookNamespace is where the tests install the protectionzone chart, as
// the quorum-control-plane chart's defaults expect it.
const ZoneWebhookNamespace = "siterecovery-system"

// StartZoneWebhook installs the protectionzone chart's cluster-wide
// ProtectionZone webhook on the quorum cluster, as the chart renders it: its
// configuration (pointed at this process), service account and roles, plus
// the quorum-control-plane chart's grant of reads in the DR namespace. It runs
// quorum-manager's --zone-webhook mode as that service account, so the test
// proves those roles are all the webhook needs.
func (e *Env) StartZoneWebhook(t testing.TB) *Process {
	t.Helper()
	o := e.installWebhooks(t, Quorum, "protectionzone", ZoneWebhookNamespace, nil, WebhookRotation{})
	c := e.Client(Quorum)
	for _, obj := range renderChart(t, "protectionzone", ZoneWebhookNamespace) {
		switch obj.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			createOrKeep(t, c, obj)
		}
	}
	for _, obj := range renderChart(t, "quorum-control-plane", Namespace) {
		if obj.GetKind() == "RoleBinding" && obj.GetName() == "quorum-manager-"+Namespace+"-zone-webhook" {
			createOrKeep(t, c, obj)
		}
	}
	sa := [2]string{ZoneWebhookNamespace, "siterecovery-zone-webhook"}
	p := e.ManagerAs(t, Quorum, "zone-webhook", sa, ctrl.Options{Cache: boot.CacheOptions(ZoneWebhookNamespace), WebhookServer: o.Server()},
		func(mgr ctrl.Manager) error {
			return setup.ZoneWebhook()(mgr, boot.Options{Namespace: ZoneWebhookNamespace, Webhook: o})
		})
	// It serves once its certificate is written and its CA injected: then a
	// zone naming a missing Secret is refused by it, not by a connection error.
	probe := chartrender.ZoneWebhookProbe(Namespace)
	Eventually(t, time.Minute, "the ProtectionZone webhook serves", func() error {
		err := c.Create(context.Background(), probe.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "does not exist in namespace") {
			return nil
		}
		if err == nil {
			return errors.New("not yet: the probe was admitted")
		}
		return fmt.Errorf("not yet: %w", err)
	})
	return p
}

// createOrKeep creates obj unless it exists: the protectionzone chart's
// cluster-scoped roles exist once per cluster.
func createOrKeep(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err, "%s", obj.GetName())
	}
}

// ensureNamespace creates a namespace unless it exists.
func ensureNamespace(t testing.TB, c client.Client, name string) {
	t.Helper()
	createOrKeep(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}
