package testfailover

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestProbePodPassesRestricted: the probe Job's pod, as the controller builds
// it, is admitted by the API server's PodSecurity plugin in a namespace that
// enforces "restricted" (the checks are k8s.io/pod-security-admission's
// policy/check_*.go at level restricted). PodSecurity enforces on pods, not on
// a Job's template, so the pod is the template's.
func TestProbePodPassesRestricted(t *testing.T) {
	z := harness.Start(t, harness.Options{CRDDirectoryPaths: []string{}}, "dr")
	c := z.Clusters["dr"].Client
	ctx := t.Context()
	ns := harness.RestrictedNamespace(t, c, "sr-test-drill")

	r := &Reconciler{ProbeImage: DefaultProbeImage}
	tf := &srv1alpha1.TestFailover{}
	tf.Name, tf.Namespace, tf.UID = "drill", "dr-production", "uid-1"
	tf.Spec.IsolatedNamespace = ns.Name
	for _, p := range []*srv1alpha1.NetworkProbe{
		{Type: srv1alpha1.ProbeTCP, Port: 22},
		{Type: srv1alpha1.ProbeHTTP, Port: 80, Path: "/healthz"},
	} {
		job := r.probeJob(&scope{tf: tf}, "vm-a", p)
		require.Equal(t, ns.Name, job.Namespace)
		pod := &corev1.Pod{ObjectMeta: job.Spec.Template.ObjectMeta, Spec: job.Spec.Template.Spec}
		pod.Namespace, pod.Name = job.Namespace, job.Name+"-"+strings.ToLower(string(p.Type))
		require.NoError(t, c.Create(ctx, pod, client.DryRunAll), "probe pod (%s) in a restricted namespace", p.Type)
	}
}
