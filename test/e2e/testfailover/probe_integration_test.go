package testfailover_test

import (
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/test/env"
)

// launcherLabels are the labels KubeVirt gives the virt-launcher pod of vm:
// its template's labels plus KubeVirt's own (no KubeVirt runs here to create
// the pod).
func launcherLabels(vm *kubevirtv1.VirtualMachine) labels.Set {
	l := labels.Set{}
	for k, v := range vm.Spec.Template.ObjectMeta.Labels {
		l[k] = v
	}
	l["kubevirt.io"] = "virt-launcher"
	l["kubevirt.io/domain"] = vm.Name
	l["vm.kubevirt.io/name"] = vm.Name
	return l
}

// assertProbeSelectsTheVMOnly: the probe Service of each test VM selects that
// VM's launcher pod, and neither the probe Job's own pod (a probe that can
// reach itself would pass with the VM down) nor another test VM.
func (z *zone) assertProbeSelectsTheVMOnly(tf *srv1alpha1.TestFailover) {
	t := z.t
	t.Helper()
	dr := z.Client(env.DR)
	ns := tf.Status.IsolatedNamespace
	launchers := map[string]labels.Set{}
	for _, name := range z.vms {
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(t, dr.Get(z.ctx, client.ObjectKey{Namespace: ns, Name: name}, vm))
		launchers[name] = launcherLabels(vm)
	}
	svcs := &corev1.ServiceList{}
	require.NoError(t, dr.List(z.ctx, svcs, client.InNamespace(ns), client.MatchingLabels{testfailover.LabelUID: string(tf.UID)}))
	require.Len(t, svcs.Items, len(z.vms), "one probe Service per test VM")
	for _, svc := range svcs.Items {
		vm := svc.Labels[testfailover.LabelVM]
		require.NotEmpty(t, svc.Spec.Selector, "Service %s", svc.Name)
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		job := &batchv1.Job{}
		require.NoError(t, dr.Get(z.ctx, client.ObjectKey{Namespace: ns, Name: svc.Name}, job), "the probe Job of %s", vm)
		require.False(t, sel.Matches(labels.Set(job.Spec.Template.Labels)),
			"Service %s selector %v matches its own probe pod's labels %v", svc.Name, svc.Spec.Selector, job.Spec.Template.Labels)
		for name, l := range launchers {
			require.Equal(t, name == vm, sel.Matches(l), "Service %s selector %v against the launcher pod of %s (%v)", svc.Name, svc.Spec.Selector, name, l)
		}
	}
}
