package charts

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestChartsSchemasRefuseUnknownKeysAndTypes renders each chart with a typo'd
// key, a value of the wrong type and a name that cannot be a Kubernetes name,
// and expects values.schema.json's refusal naming the key, before anything
// reaches a cluster.
func TestChartsSchemasRefuseUnknownKeysAndTypes(t *testing.T) {
	for _, tc := range []struct {
		name, chart string
		values      map[string]any
		want        string
	}{
		{"protectionzone unknown top-level key", "protectionzone", map[string]any{"zoneWebhok": map[string]any{"enabled": false}}, "additional properties 'zoneWebhok' not allowed"},
		{"protectionzone unknown nested key", "protectionzone", map[string]any{"zoneWebhook": map[string]any{"replica": 2}}, "additional properties 'replica' not allowed"},
		{"protectionzone replicas as a string", "protectionzone", map[string]any{"zoneWebhook": map[string]any{"replicas": "two"}}, "at '/zoneWebhook/replicas': got string, want integer"},
		{"protectionzone certificates", "protectionzone", map[string]any{"zoneWebhook": map[string]any{"certificates": "vault"}}, "/zoneWebhook/certificates"},
		{"protectionzone aggregate role as a string", "protectionzone", map[string]any{"aggregateRoles": map[string]any{"viewer": "yes"}}, "at '/aggregateRoles/viewer': got string, want boolean"},
		{"quorum unknown top-level key", "quorum-control-plane", map[string]any{"replica": 2}, "additional properties 'replica' not allowed"},
		{"workload unknown top-level key", "workload-control-plane", map[string]any{"pgControler": map[string]any{}}, "additional properties 'pgControler' not allowed"},
		{"fullnameOverride not a name", "workload-control-plane", map[string]any{"fullnameOverride": "Acme_DR"}, "/fullnameOverride"},
		{"nameOverride not a name", "protectionzone", map[string]any{"nameOverride": "-acme"}, "/nameOverride"},
		{"podLabels value not a string", "quorum-control-plane", map[string]any{"podLabels": map[string]any{"tier": 1}}, "/podLabels/tier"},
		{"priorityClassName not a name", "workload-control-plane", map[string]any{"priorityClassName": "High Priority"}, "/priorityClassName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := renderErr(t, tc.chart, tc.values)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestChartsSecurityContextOverridesCannotWeaken sets each hardening the
// charts apply to another value through the security-context overrides, and
// expects a render error naming the key, rather than a weaker pod installed
// silently; settings that add to the chart's pass and reach the pod.
func TestChartsSecurityContextOverridesCannotWeaken(t *testing.T) {
	for _, tc := range []struct {
		name, chart string
		values      map[string]any
		want        string
	}{
		{"quorum-manager as root", "quorum-control-plane", map[string]any{"podSecurityContext": map[string]any{"runAsNonRoot": false}}, "podSecurityContext.runAsNonRoot: must stay true"},
		{"quorum-manager privileged", "quorum-control-plane", map[string]any{"securityContext": map[string]any{"privileged": true}}, "securityContext.privileged: must stay unset or false"},
		{"console writable root", "quorum-control-plane", map[string]any{"console": map[string]any{"securityContext": map[string]any{"readOnlyRootFilesystem": false}}}, "console.securityContext.readOnlyRootFilesystem: must stay true"},
		{"pg-controller capability", "workload-control-plane", map[string]any{"pgController": map[string]any{"securityContext": map[string]any{"capabilities": map[string]any{"add": []any{"NET_ADMIN"}}}}}, `pgController.securityContext.capabilities: must stay {"drop":["ALL"]}`},
		{"pg-controller unconfined", "workload-control-plane", map[string]any{"pgController": map[string]any{"podSecurityContext": map[string]any{"seccompProfile": map[string]any{"type": "Unconfined"}}}}, "pgController.podSecurityContext.seccompProfile: must stay"},
		{"pg-controller privilege escalation", "workload-control-plane", map[string]any{"pgController": map[string]any{"securityContext": map[string]any{"allowPrivilegeEscalation": true}}}, "pgController.securityContext.allowPrivilegeEscalation: must stay false"},
		{"agent writable root", "workload-control-plane", map[string]any{"drbdNodeAgent": map[string]any{"securityContext": map[string]any{"readOnlyRootFilesystem": false}}}, "drbdNodeAgent.securityContext.readOnlyRootFilesystem: must stay true"},
		{"zone webhook escalation", "protectionzone", map[string]any{"zoneWebhook": map[string]any{"securityContext": map[string]any{"allowPrivilegeEscalation": true}}}, "zoneWebhook.securityContext.allowPrivilegeEscalation: must stay false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, renderErr(t, tc.chart, tc.values), tc.want)
		})
	}

	// Additions pass and keep the chart's settings beside them.
	objs := renderValues(t, "workload-control-plane", "siterecovery-system", map[string]any{
		"pgController": map[string]any{
			"podSecurityContext": map[string]any{"runAsUser": 65532, "runAsNonRoot": true},
			"securityContext":    map[string]any{"seLinuxOptions": map[string]any{"type": "container_t"}},
		},
	})
	pod := podSpec(t, findOne(t, objs, "Deployment", "pg-controller"))
	require.Equal(t, map[string]any{"runAsUser": float64(65532), "runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}, pod["securityContext"])
	c := pod["containers"].([]any)[0].(map[string]any)["securityContext"].(map[string]any)
	require.Equal(t, map[string]any{"type": "container_t"}, c["seLinuxOptions"])
	require.Equal(t, false, c["allowPrivilegeEscalation"])
	require.Equal(t, true, c["readOnlyRootFilesystem"])
}

// TestChartsPodLabelsAndPriorityReachEveryPod sets podLabels and
// priorityClassName on each chart and checks every pod template it renders.
func TestChartsPodLabelsAndPriorityReachEveryPod(t *testing.T) {
	for _, ch := range chartsUnderTest {
		t.Run(ch.dir, func(t *testing.T) {
			values := map[string]any{"podLabels": map[string]any{"team": "storage"}, "priorityClassName": "siterecovery-high"}
			if ch.dir == "workload-control-plane" {
				// The agent's own default (system-node-critical) yields to the top-level one only when cleared.
				values["drbdNodeAgent"] = map[string]any{"priorityClassName": ""}
			}
			pods := 0
			for _, obj := range renderValues(t, ch.dir, ch.namespace, values) {
				spec, ok := podTemplate(obj)
				if !ok {
					continue
				}
				pods++
				tmpl, _, _ := unstructured.NestedMap(obj.Object, "spec", "template", "metadata", "labels")
				require.Equal(t, "storage", tmpl["team"], "%s %s: pod labels", obj.GetKind(), obj.GetName())
				require.Equal(t, "siterecovery-high", spec["priorityClassName"], "%s %s: priorityClassName", obj.GetKind(), obj.GetName())
				sel, _, _ := unstructured.NestedMap(obj.Object, "spec", "selector", "matchLabels")
				require.NotContains(t, sel, "team", "%s %s: podLabels must stay out of the immutable selector", obj.GetKind(), obj.GetName())
			}
			require.Positive(t, pods, "chart %s renders no pod template", ch.dir)
		})
	}
	// By default the agent keeps its node-critical priority and pg-controller has none.
	objs := render(t, "workload-control-plane", "siterecovery-system")
	require.Equal(t, "system-node-critical", podSpec(t, findOne(t, objs, "DaemonSet", "drbd-node-agent"))["priorityClassName"])
	require.NotContains(t, podSpec(t, findOne(t, objs, "Deployment", "pg-controller")), "priorityClassName")
}

// podTemplate returns the pod spec of a workload object.
func podTemplate(obj *unstructured.Unstructured) (map[string]any, bool) {
	spec, ok, _ := unstructured.NestedMap(obj.Object, "spec", "template", "spec")
	return spec, ok
}

func podSpec(t *testing.T, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	spec, ok := podTemplate(obj)
	require.True(t, ok, "%s %s has no pod template", obj.GetKind(), obj.GetName())
	return spec
}
