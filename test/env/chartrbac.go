package env

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/siterecovery/siterecovery/internal/workload/protectiongroup"
	wsetup "github.com/siterecovery/siterecovery/internal/workload/setup"
	"github.com/siterecovery/siterecovery/internal/workload/vrg"
	"github.com/siterecovery/siterecovery/test/chartrender"
	kubevirtsim "github.com/siterecovery/siterecovery/test/sim/kubevirt"
	"github.com/siterecovery/siterecovery/test/sim/storagearray"
)

// ChartRBACEnv names the variable that, set to any value, runs quorum-manager, pg-controller and the
// drbd-node-agent of every zone under the service accounts and roles their
// charts install, instead of as cluster admin, so that any integration test
// proves the generated roles grant what the controllers use:
//
//	SITERECOVERY_CHART_RBAC=1 go test ./test/e2e/failover/ -run TestX
//
// The simulators keep admin rights. Connections to the workload clusters use the
// kubeconfigs of the zone's Secrets, as in production.
const ChartRBACEnv = "SITERECOVERY_CHART_RBAC"

// workloadNamespace is where the workload-control-plane chart is installed.
const workloadNamespace = "siterecovery-system"

// chartIdentities are the service accounts (namespace, name) the charts bind
// each manager's role to, by the manager names this package uses.
var chartIdentities = map[string][2]string{
	"quorum-manager":  {Namespace, "quorum-manager-" + Namespace},
	"pg-controller":   {workloadNamespace, "pg-controller"},
	"drbd-node-agent": {workloadNamespace, "drbd-node-agent"},
}

func chartRBAC() bool { return os.Getenv(ChartRBACEnv) != "" }

// identity returns cfg impersonating the chart's service account of the
// manager name, when ChartRBACEnv is set.
func identity(cfg *rest.Config, name string) *rest.Config {
	sa, ok := chartIdentities[name]
	if !chartRBAC() || !ok {
		return cfg
	}
	return impersonate(cfg, sa)
}

// impersonate returns cfg acting as the service account (namespace, name).
func impersonate(cfg *rest.Config, sa [2]string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + sa[0] + ":" + sa[1],
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + sa[0], "system:authenticated"},
	}
	return c
}

// installChartRBAC creates the service accounts, roles and bindings the charts
// render: quorum-control-plane in the DR namespace of the quorum cluster,
// workload-control-plane on each workload cluster.
func (e *Env) installChartRBAC(t testing.TB) {
	if !chartRBAC() {
		return
	}
	ctx := context.Background()
	for name, c := range e.Clusters {
		chart, ns := "workload-control-plane", workloadNamespace
		// The workload chart grants per DR namespace what the agent and
		// pg-controller need there (the agent's get on the peer-auth Secrets
		// of <dr>-drbd-auth, pg-controller's reads in the DR namespace); the
		// namespaces themselves the env has created.
		values := map[string]any{"quorumAccess": map[string]any{"drNamespaces": []any{Namespace}, "createNamespaces": false}}
		if name == Quorum {
			chart, ns, values = "quorum-control-plane", Namespace, nil
		}
		ensureNamespace(t, c.Client, ns)
		for _, obj := range renderChartValues(t, chart, ns, values) {
			switch obj.GetKind() {
			case "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
				if err := c.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
					require.NoError(t, err, "%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
				}
			}
		}
	}
}

// startWorkloadAsChart is StartWorkload under the chart's role: pg-controller
// in a manager of its own, the simulators in another with admin rights.
func (e *Env) startWorkloadAsChart(t testing.TB, cluster string, o WorkloadOptions) *Process {
	e.Manager(t, cluster, "simulators", ctrl.Options{}, func(mgr ctrl.Manager) error {
		if o.Offloaded != nil {
			if err := storagearray.SetupWithManager(mgr, storagearray.Options{Delay: o.Offloaded.ArrayDelay, Sync: o.Offloaded.Sync, Conditions: o.Offloaded.Sync != nil}); err != nil {
				return err
			}
		}
		return kubevirtsim.SetupWithManager(mgr, e.KubeVirtOptions(cluster, o.VMStartDelay, o.VMStopDelay))
	})
	return e.Manager(t, cluster, "pg-controller", ctrl.Options{}, func(mgr ctrl.Manager) error {
		if o.Offloaded == nil {
			return protectiongroup.SetupWithManager(mgr)
		}
		ns := o.Offloaded.OperatorNamespace
		if ns == "" {
			ns = vrg.DefaultOperatorNamespace
		}
		err := e.Client(cluster).Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return wsetup.PGController(wsetup.PGOptions{OperatorNamespace: ns})(mgr, wsetup.Options{})
	})
}

// renderChart renders a chart of this repository as `helm template` would.
func renderChart(t testing.TB, chart, namespace string) []*unstructured.Unstructured {
	t.Helper()
	return renderChartValues(t, chart, namespace, nil)
}

// renderChartValues is renderChart with values over the chart's defaults.
func renderChartValues(t testing.TB, chart, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := chartrender.RenderValues(chart, namespace, values)
	require.NoError(t, err)
	return objs
}
