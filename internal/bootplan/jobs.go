package bootplan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Labels of the Jobs a boot runs: the group's, and the boot's, so that a
// later boot never reads an earlier one's verdict and a stop deletes them.
const (
	LabelBoot = "siterecovery.trilio.io/boot"
	LabelKind = "siterecovery.trilio.io/boot-job"
)

// BootID names one boot of one group: it changes with each start. The start
// counts to the second, as status.boot stores it.
func BootID(groupUID string, start time.Time) string {
	sum := sha256.Sum256([]byte(groupUID + "/" + start.UTC().Truncate(time.Second).Format(time.RFC3339)))
	return hex.EncodeToString(sum[:])[:12]
}

// StepJobName is the Job of one step of one boot.
func StepJobName(bootID string, k StepKey) string {
	return jobName("srboot-"+string(k.Kind), bootID, k.Stage)
}

// ProbeJobName is the Job that probes one VM's gate in one boot.
func ProbeJobName(bootID, vm string) string {
	return jobName("srgate", bootID, vm)
}

// jobName stays within 63 characters (the Job's name becomes its pods'
// job-name label) and unique per boot and subject.
func jobName(prefix, bootID, subject string) string {
	sum := sha256.Sum256([]byte(bootID + "/" + subject))
	return prefix + "-" + hex.EncodeToString(sum[:])[:16]
}

// JobLabels are the labels of a boot's Jobs and their pods.
func JobLabels(group, bootID, kind string) map[string]string {
	return map[string]string{srv1alpha1.ProtectionGroupLabel: group, LabelBoot: bootID, LabelKind: kind}
}

// StepJob is a step's Job: the step's container, under the restricted pod
// security profile whatever the step asks, bounded by the stage's deadline,
// never retried (a step that fails ends its stage).
func StepJob(group, bootID string, st Step, now time.Time) *batchv1.Job {
	env := make([]corev1.EnvVar, 0, len(st.Spec.Env))
	for _, e := range st.Spec.Env {
		env = append(env, corev1.EnvVar{Name: e.Name, Value: e.Value})
	}
	c := corev1.Container{Name: "step", Image: st.Spec.Image, Command: st.Spec.Command, Args: st.Spec.Args, Env: env}
	job := restrictedJob(st.Namespace, StepJobName(bootID, st.StepKey), JobLabels(group, bootID, string(st.Kind)), c, st.Deadline.Sub(now), 0)
	job.Spec.Template.Spec.ServiceAccountName = st.Spec.ServiceAccountName
	return job
}

// ProbeJob is a gate's probe: the probe image's client connects to the VM's
// address, retried until the stage's deadline.
func ProbeJob(group, bootID, namespace, image string, p Probe, now time.Time) *batchv1.Job {
	hostPort := net.JoinHostPort(p.Address, strconv.Itoa(int(p.Gate.Port)))
	// The probe image's entrypoint is siterecovery-probe (cmd/siterecovery-probe).
	args := []string{"-tcp", hostPort}
	if p.Gate.Type == srv1alpha1.GateHTTP {
		args = []string{"-http", "http://" + hostPort + p.Gate.Path}
	}
	args = append(args, "-timeout", "10s")
	c := corev1.Container{Name: "probe", Image: image, Args: args,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
		}}
	job := restrictedJob(namespace, ProbeJobName(bootID, p.VM), JobLabels(group, bootID, "gate"), c, p.Deadline.Sub(now), probeRetries)
	job.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(false)
	return job
}

// probeRetries lets a probe try again while the guest's service comes up;
// the Job's deadline is the stage's.
const probeRetries = 30

// restrictedJob runs c once under PodSecurity "restricted": non-root (the
// image names a numeric user; no fixed UID, which platforms that assign each
// namespace a UID range refuse), RuntimeDefault seccomp, no privilege
// escalation, every capability dropped.
func restrictedJob(namespace, name string, labels map[string]string, c corev1.Container, left time.Duration, retries int32) *batchv1.Job {
	c.SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	deadline := max(int64(left.Seconds()), 1)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To(retries),
			ActiveDeadlineSeconds: ptr.To(deadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{c},
				},
			},
		},
	}
}

// Verdict reads a Job's state: Complete succeeds, Failed fails with its
// reason and message.
func Verdict(job *batchv1.Job) JobResult {
	if job == nil {
		return JobResult{State: JobAbsent}
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return JobResult{State: JobSucceeded}
		case batchv1.JobFailed:
			return JobResult{State: JobFailed, Message: fmt.Sprintf("Job %s/%s failed: %s %s", job.Namespace, job.Name, c.Reason, c.Message)}
		}
	}
	return JobResult{State: JobRunning}
}
