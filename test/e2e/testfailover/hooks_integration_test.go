package testfailover_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/test/chartrender"
	"github.com/siterecovery/siterecovery/test/env"
)

// testHookSidecars gives a group VM a hook sidecar (on the production VM and
// its standby, as pg-sync keeps them). With the workload chart's defaults a
// test failover fails in Pending, naming the VM, the annotation and the
// value that allows it, and creates nothing. Upgraded as helm would with
// quorumAccess.testFailover.allowHookSidecars=true, the test copy keeps the
// sidecar, the guard admits it and the test passes. It changes the DR
// cluster's release, so it runs last in its zone.
func (z *zone) testHookSidecars(t *testing.T) {
	name := z.vms[0]
	const hooks = `[{"image": "registry.example/hook:1"}]`
	for _, cluster := range []string{env.Primary, env.DR} {
		c := z.Client(cluster)
		vm := &kubevirtv1.VirtualMachine{}
		require.NoError(t, c.Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: name}, vm))
		before := vm.DeepCopy()
		if vm.Spec.Template.ObjectMeta.Annotations == nil {
			vm.Spec.Template.ObjectMeta.Annotations = map[string]string{}
		}
		vm.Spec.Template.ObjectMeta.Annotations[testfailover.HookSidecarsAnnotation] = hooks
		require.NoError(t, c.Patch(z.ctx, vm, client.MergeFrom(before)))
	}

	tf := z.waitPhase(z.testFailover("hooks-refused", env.DR, nil), srv1alpha1.TestFailoverFailed)
	require.Equal(t, testfailover.ReasonHookSidecar, readyReason(tf))
	msg := meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady).Message
	for _, says := range []string{"VM " + env.AppNS + "/" + name + " has hook sidecars", testfailover.HookSidecarsAnnotation,
		"set quorumAccess.testFailover.allowHookSidecars=true in the workload-control-plane release on " + env.DR} {
		require.Contains(t, msg, says)
	}
	require.Equal(t, []string{"Pending", "Failed"}, phases(tf), "refused before anything was made")

	z.upgradeQuorumAccess(env.DR, map[string]any{"testFailover": map[string]any{"allowHookSidecars": true}})
	allowed := z.testFailover("hooks-allowed", env.DR, nil)
	env.Eventually(t, timeout, "the test copy of "+name, func() error {
		vm := &kubevirtv1.VirtualMachine{}
		if err := z.Client(env.DR).Get(z.ctx, client.ObjectKey{Namespace: "sr-test-" + allowed, Name: name}, vm); err != nil {
			return err
		}
		if got := vm.Spec.Template.ObjectMeta.Annotations[testfailover.HookSidecarsAnnotation]; got != hooks {
			return fmt.Errorf("the copy's %s is %q", testfailover.HookSidecarsAnnotation, got)
		}
		return nil
	})
	tf = z.waitPhase(allowed, srv1alpha1.TestFailoverSucceeded)
	z.assertLeavesNothing(tf)
}

// upgradeQuorumAccess applies the workload chart's quorum access objects of
// cluster rendered with more quorumAccess values, as helm upgrade would: the
// guard and the settings ConfigMap change in place.
func (z *zone) upgradeQuorumAccess(cluster string, more map[string]any) {
	t := z.t
	t.Helper()
	values := env.WorkloadValues()
	for k, v := range more {
		values["quorumAccess"].(map[string]any)[k] = v
	}
	objs, err := chartrender.RenderValues("workload-control-plane", "siterecovery-system", values)
	require.NoError(t, err)
	c := z.Client(cluster)
	updated := 0
	for _, obj := range objs {
		if obj.GetLabels()["app.kubernetes.io/name"] != "quorum-access" ||
			(obj.GetKind() != "ValidatingAdmissionPolicy" && obj.GetKind() != "ConfigMap") {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		require.NoError(t, c.Get(z.ctx, client.ObjectKeyFromObject(obj), live))
		obj.SetResourceVersion(live.GetResourceVersion())
		require.NoError(t, c.Update(z.ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		updated++
	}
	require.Equal(t, 2, updated, "the guard and the settings ConfigMap")
}
