package charts

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/siterecovery/siterecovery/test/chartrender"
)

func forceServiceMonitors(secure bool) map[string]any {
	return map[string]any{
		"metrics":    map[string]any{"secure": secure},
		"monitoring": map[string]any{"serviceMonitor": map[string]any{"force": true}},
	}
}

// TestServiceMonitorsScrapeEveryBinary renders both charts with their
// ServiceMonitors and follows each to the pods it scrapes: a ServiceMonitor
// selects a metrics Service in its namespace, whose selector matches the
// binary's pods and whose port is the binary's --metrics-bind-address; with
// secure metrics the endpoint is HTTPS with a bearer token, the binary runs with
// --metrics-secure=true and its ServiceAccount may review tokens.
func TestServiceMonitorsScrapeEveryBinary(t *testing.T) {
	for _, secure := range []bool{true, false} {
		for chart, binaries := range map[string][]string{
			"quorum-control-plane":   {"quorum-manager"},
			"workload-control-plane": {"pg-controller", "drbd-node-agent"},
		} {
			t.Run(fmt.Sprintf("%s secure=%v", chart, secure), func(t *testing.T) {
				objs, err := chartrender.RenderValues(chart, "dr-production", forceServiceMonitors(secure))
				require.NoError(t, err)
				var monitors []*unstructured.Unstructured
				for _, o := range objs {
					if o.GetKind() == "ServiceMonitor" {
						monitors = append(monitors, o)
					}
				}
				require.Len(t, monitors, len(binaries))
				for _, sm := range monitors {
					checkServiceMonitor(t, objs, sm, secure)
				}
			})
		}
	}
	// Without the Prometheus Operator's API, no ServiceMonitor renders.
	for _, chart := range []string{"quorum-control-plane", "workload-control-plane"} {
		objs, err := chartrender.Render(chart, "dr-production")
		require.NoError(t, err)
		for _, o := range objs {
			require.NotEqual(t, "ServiceMonitor", o.GetKind(), chart)
		}
	}
}

func checkServiceMonitor(t *testing.T, objs []*unstructured.Unstructured, sm *unstructured.Unstructured, secure bool) {
	t.Helper()
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	ns, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
	require.Equal(t, []string{sm.GetNamespace()}, ns, "%s scrapes its own namespace only", sm.GetName())
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	require.Len(t, eps, 1)
	ep := eps[0].(map[string]any)

	var svc *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Service" && o.GetNamespace() == sm.GetNamespace() && labels.SelectorFromSet(sel).Matches(labels.Set(o.GetLabels())) {
			require.Nil(t, svc, "%s selects one Service", sm.GetName())
			svc = o
		}
	}
	require.NotNil(t, svc, "%s selects a Service", sm.GetName())
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	var port map[string]any
	for _, p := range ports {
		if p.(map[string]any)["name"] == ep["port"] {
			port = p.(map[string]any)
		}
	}
	require.NotNil(t, port, "Service %s has the port %v", svc.GetName(), ep["port"])
	podSel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")

	var pods []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "Deployment" && o.GetKind() != "DaemonSet" {
			continue
		}
		podLabels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		if labels.SelectorFromSet(podSel).Matches(labels.Set(podLabels)) {
			pods = append(pods, o)
		}
	}
	require.Len(t, pods, 1, "Service %s selects one workload's pods", svc.GetName())
	w := pods[0]
	containers, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	wantPort := fmt.Sprint(port["targetPort"])
	if wantPort == "metrics" {
		wantPort = fmt.Sprint(port["port"]) // the named container port is the metrics port
	}
	require.Contains(t, args, "--metrics-bind-address=:"+wantPort, "%s serves metrics where the Service points", w.GetName())
	require.Contains(t, args, fmt.Sprintf("--metrics-secure=%v", secure))

	sa, _, _ := unstructured.NestedString(w.Object, "spec", "template", "spec", "serviceAccountName")
	delegated := slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
		if o.GetKind() != "ClusterRoleBinding" {
			return false
		}
		role, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			m := s.(map[string]any)
			if role == "system:auth-delegator" && m["name"] == sa && m["namespace"] == w.GetNamespace() {
				return true
			}
		}
		return false
	})
	require.Equal(t, secure, delegated, "%s's ServiceAccount %s is bound to system:auth-delegator", w.GetName(), sa)
	if secure {
		require.Equal(t, "https", ep["scheme"])
		require.NotEmpty(t, ep["bearerTokenFile"])
	} else {
		require.Nil(t, ep["scheme"])
	}
}
