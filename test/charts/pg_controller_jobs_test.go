package charts

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/bootplan"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// TestPGControllerJobsOnlyBootPlans installs the workload chart's
// pg-controller roles and policies in a real API server and acts as
// pg-controller's ServiceAccount: it creates and deletes the Jobs a boot
// plan runs (built by the product's own builders), and the API server
// refuses any other Job (unlabelled, in kube-system, privileged, with a host
// path, a Secret's value or a second container), any change of a Job, and
// the deletion of an application's Job.
func TestPGControllerJobsOnlyBootPlans(t *testing.T) {
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, harness.Primary)
	cluster := zone.Clusters[harness.Primary]
	admin, ctx := cluster.Client, t.Context()
	for _, ns := range []string{"siterecovery-system", "apps"} {
		require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	rbac := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
	for _, obj := range renderValues(t, "workload-control-plane", "siterecovery-system", nil) {
		if slices.Contains(rbac, obj.GetKind()) && obj.GetLabels()["app.kubernetes.io/name"] == "pg-controller" {
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:siterecovery-system:pg-controller",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:siterecovery-system", "system:authenticated"}}
	pg, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)

	now := time.Now()
	step := bootplan.Step{StepKey: bootplan.StepKey{Stage: "db", Kind: bootplan.PreStart}, Namespace: "apps", Deadline: now.Add(time.Minute),
		Spec: &srv1alpha1.BootStep{Image: "registry.example/migrate:1", Env: []srv1alpha1.BootStepEnv{{Name: "A", Value: "b"}}}}
	stepJob := bootplan.StepJob("pg", "abc", step, now)
	probeJob := bootplan.ProbeJob("pg", "abc", "apps", "registry.example/probe:1", bootplan.Probe{VM: "apps/db",
		Gate: srv1alpha1.BootGate{Type: srv1alpha1.GateTCP, Port: 5432}, Address: "10.0.0.5", Deadline: now.Add(time.Minute)}, now)

	const guard = "siterecovery-pg-controller-jobs"
	require.Eventually(t, func() bool {
		bad := stepJob.DeepCopy()
		bad.Namespace = "kube-system"
		err := pg.Create(ctx, bad, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), guard)
	}, 30*time.Second, 100*time.Millisecond, "the Job guard never refused a Job in kube-system")

	t.Run("allowed", func(t *testing.T) {
		for _, job := range []*batchv1.Job{stepJob, probeJob} {
			require.NoError(t, pg.Create(ctx, job.DeepCopy()), "creating %s", job.Name)
			require.NoError(t, pg.Delete(ctx, job.DeepCopy()), "deleting %s", job.Name)
		}
	})

	t.Run("refused", func(t *testing.T) {
		refused := func(name string, mutate func(*batchv1.Job)) {
			t.Helper()
			job := stepJob.DeepCopy()
			mutate(job)
			err := pg.Create(ctx, job, client.DryRunAll)
			require.Error(t, err, name)
			require.Contains(t, err.Error(), guard, name)
		}
		pod := func(j *batchv1.Job) *corev1.PodSpec { return &j.Spec.Template.Spec }
		refused("unlabelled", func(j *batchv1.Job) { delete(j.Labels, bootplan.LabelBoot) })
		refused("in the release namespace", func(j *batchv1.Job) { j.Namespace = "siterecovery-system" })
		refused("privileged", func(j *batchv1.Job) {
			sc := pod(j).Containers[0].SecurityContext
			sc.Privileged, sc.AllowPrivilegeEscalation = ptr.To(true), nil
		})
		refused("escalation", func(j *batchv1.Job) { pod(j).Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true) })
		refused("a capability added", func(j *batchv1.Job) {
			pod(j).Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		})
		refused("root allowed", func(j *batchv1.Job) { pod(j).SecurityContext.RunAsNonRoot = nil })
		refused("host network", func(j *batchv1.Job) { pod(j).HostNetwork = true })
		refused("a host path", func(j *batchv1.Job) {
			pod(j).Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			pod(j).Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "root", MountPath: "/host"}}
		})
		refused("a Secret's value", func(j *batchv1.Job) {
			pod(j).Containers[0].Env = append(pod(j).Containers[0].Env, corev1.EnvVar{Name: "T", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-admin"}, Key: "password"}}})
		})
		refused("a second container", func(j *batchv1.Job) {
			second := *pod(j).Containers[0].DeepCopy()
			second.Name = "sidecar"
			pod(j).Containers = append(pod(j).Containers, second)
		})

		existing := stepJob.DeepCopy()
		existing.Name = "srboot-existing"
		require.NoError(t, admin.Create(ctx, existing))
		job := &batchv1.Job{}
		require.NoError(t, pg.Get(ctx, client.ObjectKeyFromObject(existing), job))
		job.Labels["x"] = "y"
		err := pg.Update(ctx, job, client.DryRunAll)
		require.True(t, apierrors.IsForbidden(err), "changing a Job: %v", err)
		other := stepJob.DeepCopy()
		other.Name = "app-batch"
		delete(other.Labels, bootplan.LabelBoot)
		require.NoError(t, admin.Create(ctx, other))
		err = pg.Delete(ctx, other, client.DryRunAll)
		require.ErrorContains(t, err, "only the Jobs of boot plans", "deleting an application's Job")
	})
}
