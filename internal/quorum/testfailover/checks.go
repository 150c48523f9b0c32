package testfailover

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// probeGrace is how long a probe Job may take beyond its own timeout to be
// scheduled and pull its image before the probe counts as failed.
const probeGrace = 2 * time.Minute

// verifying runs the guest agent and probe checks on every Ready test VM and
// records each verdict; a VM that never became Ready gets them recorded as not
// run. When every check has a verdict the test concludes.
func (r *Reconciler) verifying(ctx context.Context, s *scope) (ctrl.Result, error) {
	rc, err := r.dr(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	checks := s.tf.Spec.Checks
	since := s.trail.EnteredAt(srv1alpha1.TestFailoverVerifying)
	var waiting []string
	for _, res := range append([]srv1alpha1.CheckResult(nil), s.tf.Status.Results...) {
		if res.Check != CheckVMReady {
			continue
		}
		vm := res.VM
		if !res.Passed {
			why := "the test VM never became Ready"
			if strings.HasPrefix(res.Message, "not started:") {
				why = "the boot plan did not start the test VM"
			}
			if checks.GuestAgent {
				s.record(vm, CheckGuestAgent, false, "not run: %s", why)
			}
			if checks.Probe != nil {
				s.record(vm, CheckProbe, false, "not run: %s", why)
			}
			continue
		}
		if checks.GuestAgent {
			if !s.recorded(vm, CheckGuestAgent) {
				ok, err := r.checkAgent(ctx, s, rc, vm, since)
				if err != nil {
					return ctrl.Result{}, err
				}
				if !ok {
					waiting = append(waiting, vm+" guest agent")
				}
			}
		}
		if checks.Probe != nil {
			if !s.recorded(vm, CheckProbe) {
				ok, err := r.checkProbe(ctx, s, rc, vm, since)
				if err != nil {
					return ctrl.Result{}, err
				}
				if !ok {
					waiting = append(waiting, vm+" probe")
				}
			}
		}
	}
	if len(waiting) > 0 {
		return ctrl.Result{}, waitFor("waiting for %s", strings.Join(waiting, ", "))
	}
	var failed []string
	for _, res := range s.tf.Status.Results {
		if !res.Passed {
			failed = append(failed, res.VM+"/"+res.Check)
		}
	}
	if len(failed) > 0 {
		s.conclude(false, ReasonChecksFailed, "%d of %d check(s) failed: %s%s", len(failed), len(s.tf.Status.Results), strings.Join(failed, ", "), bootStopped(s.tf.Status.Boot))
		return ctrl.Result{}, nil
	}
	s.conclude(true, ReasonPassed, "all %d check(s) passed", len(s.tf.Status.Results))
	return ctrl.Result{}, nil
}

// checkAgent records the guest agent verdict once the VMI reports the agent
// connected, or once vmReadyTimeoutSeconds has passed without it.
func (r *Reconciler) checkAgent(ctx context.Context, s *scope, rc *remote.Remote, vm string, since time.Time) (bool, error) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: s.namespace(), Name: vm}, vmi)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, remoteErr(s.tf.Spec.TargetCluster, "reading VMI "+vm, err)
	}
	state := "no VirtualMachineInstance"
	if err == nil {
		state = "condition AgentConnected absent"
		for _, c := range vmi.Status.Conditions {
			if c.Type != kubevirtv1.VirtualMachineInstanceAgentConnected {
				continue
			}
			if c.Status == corev1.ConditionTrue {
				s.record(vm, CheckGuestAgent, true, "guest agent connected")
				return true, nil
			}
			state = fmt.Sprintf("condition AgentConnected=%s %s", c.Status, c.Message)
		}
	}
	if s.now.Sub(since) >= s.vmReadyTimeout() {
		s.record(vm, CheckGuestAgent, false, "guest agent of test VM %s did not connect within %ds (%s); is qemu-guest-agent installed in the guest?",
			vm, int(s.vmReadyTimeout().Seconds()), state)
		return true, nil
	}
	return false, nil
}

// checkProbe runs the probe as a Job in the isolated namespace and reads its
// verdict from the Job's status: Complete passes, Failed fails.
func (r *Reconciler) checkProbe(ctx context.Context, s *scope, rc *remote.Remote, vm string, since time.Time) (bool, error) {
	cluster := s.tf.Spec.TargetCluster
	probe := s.tf.Spec.Checks.Probe
	job := &batchv1.Job{}
	err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: s.namespace(), Name: probeName(vm)}, job)
	if apierrors.IsNotFound(err) {
		job = r.probeJob(s, vm, probe)
		if err := rc.Direct.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, remoteErr(cluster, "creating probe Job "+job.Name, err)
		}
		return false, nil
	}
	if err != nil {
		return false, remoteErr(cluster, "reading probe Job "+probeName(vm), err)
	}
	target := fmt.Sprintf("%s %s:%d%s", probe.Type, probeHost(s, vm), probe.Port, probe.Path)
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			s.record(vm, CheckProbe, true, "probe %s succeeded", target)
			return true, nil
		case batchv1.JobFailed:
			s.record(vm, CheckProbe, false, "probe %s failed: %s %s", target, c.Reason, c.Message)
			return true, nil
		}
	}
	limit := time.Duration(probeTimeout(probe))*time.Second + probeGrace
	if s.now.Sub(since) >= limit {
		s.record(vm, CheckProbe, false, "probe %s gave no verdict within %s (Job %s/%s neither Complete nor Failed)", target, limit, s.namespace(), job.Name)
		return true, nil
	}
	return false, nil
}

func probeTimeout(p *srv1alpha1.NetworkProbe) int32 {
	if p.TimeoutSeconds > 0 {
		return p.TimeoutSeconds
	}
	return 60
}

// probeHost is the DNS name of a test VM's probe Service.
func probeHost(s *scope, vm string) string { return probeName(vm) + "." + s.namespace() + ".svc" }

// probeJob is a one-shot, unprivileged client that connects to the test VM
// through its Service.
func (r *Reconciler) probeJob(s *scope, vm string, p *srv1alpha1.NetworkProbe) *batchv1.Job {
	timeout := probeTimeout(p)
	host := probeHost(s, vm)
	// The probe image's entrypoint is siterecovery-probe (cmd/siterecovery-probe).
	args := []string{"-tcp", net.JoinHostPort(host, strconv.Itoa(int(p.Port)))}
	if p.Type == srv1alpha1.ProbeHTTP {
		args = []string{"-http", fmt.Sprintf("http://%s%s", net.JoinHostPort(host, strconv.Itoa(int(p.Port))), p.Path)}
	}
	args = append(args, "-timeout", fmt.Sprintf("%ds", timeout))
	labels := componentLabels(s.tf, vm, ComponentProbe)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace(), Name: probeName(vm), Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To(int32(2)),
			ActiveDeadlineSeconds: ptr.To(int64(timeout) + 30),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					// PodSecurity "restricted" (runAsNonRoot, RuntimeDefault seccomp, no
					// escalation, all capabilities dropped). No fixed UID: the probe
					// image names a numeric non-root USER (65532), which the kubelet
					// checks against runAsNonRoot, and platforms that assign each
					// namespace its own UID range (OpenShift's restricted-v2) refuse a
					// fixed one.
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name: "probe", Image: r.ProbeImage, Args: args,
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
						},
					}},
				},
			},
		},
	}
}

// ensureProbeService gives a test VM a DNS name for the probe: a headless
// Service selecting its launcher pod (which carries the VM template's labels,
// LabelComponent=ComponentVM among them) and not the probe pod.
func (r *Reconciler) ensureProbeService(ctx context.Context, s *scope, rc *remote.Remote, vm string) error {
	p := s.tf.Spec.Checks.Probe
	if p == nil {
		return nil
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace(), Name: probeName(vm), Labels: labelsOf(s.tf, vm)},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  probeSelector(s.tf, vm),
			Ports:     []corev1.ServicePort{{Name: "probe", Port: p.Port, Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := rc.Direct.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
		return remoteErr(s.tf.Spec.TargetCluster, "creating probe Service "+svc.Name, err)
	}
	return nil
}
