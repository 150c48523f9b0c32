package testfailover

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/bootplan"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestProbePodPassesRestricted: the probe Job's pod and the boot plan's step
// and gate Jobs' pods, as the controller builds them, are admitted by the API
// server's PodSecurity plugin in a namespace that enforces "restricted" (the
// checks are k8s.io/pod-security-admission's policy/check_*.go at level
// restricted). PodSecurity enforces on pods, not on a Job's template, so the
// pod is the template's.
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

	// The boot plan's Jobs as test failover makes them: a step that asks for
	// a service account of its production namespace, and TCP and HTTP gates.
	s := &scope{tf: tf, group: &srv1alpha1.ProtectionGroup{}, now: time.Now()}
	s.group.Name = "production-pg"
	step := bootplan.Step{StepKey: bootplan.StepKey{Stage: "db", Kind: bootplan.PreStart}, Namespace: ns.Name, Deadline: s.now.Add(time.Minute),
		Spec: &srv1alpha1.BootStep{Image: "registry.example/migrate:1", Command: []string{"/migrate"}, ServiceAccountName: "db-admin"}}
	jobs := []*batchv1.Job{r.stepJob(s, bootID(tf), step)}
	for _, g := range []srv1alpha1.BootGate{{Type: srv1alpha1.GateTCP, Port: 5432}, {Type: srv1alpha1.GateHTTP, Port: 80, Path: "/healthz"}} {
		jobs = append(jobs, r.gateJob(s, bootID(tf), bootplan.Probe{VM: ns.Name + "/vm-" + strings.ToLower(string(g.Type)), Gate: g, Address: "10.0.0.5", Deadline: s.now.Add(time.Minute)}))
	}
	for _, job := range jobs {
		require.Equal(t, ns.Name, job.Namespace)
		require.Equal(t, string(tf.UID), job.Labels[LabelUID], "the cleanup finds %s by the test's label", job.Name)
		require.NotContains(t, job.Labels, srv1alpha1.ProtectionGroupLabel, "pg-controller deletes its group's boot Jobs by that label")
		require.Equal(t, ptr.To(false), job.Spec.Template.Spec.AutomountServiceAccountToken, "%s mounts no token", job.Name)
		require.Empty(t, job.Spec.Template.Spec.ServiceAccountName)
		pod := &corev1.Pod{ObjectMeta: job.Spec.Template.ObjectMeta, Spec: job.Spec.Template.Spec}
		pod.Namespace, pod.Name = job.Namespace, job.Name
		require.NoError(t, c.Create(ctx, pod, client.DryRunAll), "boot Job %s's pod in a restricted namespace", job.Name)
	}
}
