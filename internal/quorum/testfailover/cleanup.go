package testfailover

import (
	"context"
	"fmt"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// cleaningUp deletes everything the test created on the DR cluster and, once
// nothing is left, ends the test with the verdict recorded when cleanup began.
func (r *Reconciler) cleaningUp(ctx context.Context, s *scope) (ctrl.Result, error) {
	rc, err := r.dr(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	left, err := r.deleteAll(ctx, s, rc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(left) > 0 {
		return ctrl.Result{}, waitFor("cleaning up: waiting for %s to go", strings.Join(left, ", "))
	}
	s.trail.Condition(ConditionCleanedUp, metav1.ConditionTrue, ReasonCleanedUp, "every test object on "+s.tf.Spec.TargetCluster+" is deleted")
	v := s.verdict()
	if v != nil && v.Status == metav1.ConditionTrue {
		s.trail.Succeed(ReasonPassed, "%s; cleaned up", v.Message)
		return ctrl.Result{}, nil
	}
	reason, msg := ReasonChecksFailed, "the test failed"
	if v != nil {
		reason, msg = v.Reason, v.Message
	}
	s.trail.Enter(srv1alpha1.TestFailoverFailed, "%s; cleaned up", msg)
	s.trail.Condition(srv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	return ctrl.Result{}, nil
}

// zoneOfTarget finds the zone by its target cluster, so that cleanup works even
// when the group is gone.
func (r *Reconciler) zoneOfTarget(ctx context.Context, s *scope) (string, error) {
	list := &srv1alpha1.ProtectionZoneList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.tf.Namespace)); err != nil {
		return "", err
	}
	for _, z := range list.Items {
		for _, c := range z.Spec.Clusters {
			if c.Name == s.tf.Spec.TargetCluster {
				return z.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no ProtectionZone of %s has cluster %s: cannot clean up the test", s.tf.Namespace, s.tf.Spec.TargetCluster)
}

// deleteAll deletes, by the test's UID label, the probe Jobs, test VMs,
// Services, restored PVCs, snapshots (copies and production-side ones), the
// snapshot contents of the copies, the NetworkPolicy and the isolated namespace,
// and returns what still exists. A namespace that is Terminating counts as gone.
func (r *Reconciler) deleteAll(ctx context.Context, s *scope, rc *remote.Remote) ([]string, error) {
	cluster := s.tf.Spec.TargetCluster
	sel := client.MatchingLabels{LabelUID: string(s.tf.UID)}
	ns := s.namespace()
	kinds := []struct {
		name string
		list client.ObjectList
		opts []client.ListOption
	}{
		{"Job", &batchv1.JobList{}, []client.ListOption{sel, client.InNamespace(ns)}},
		{"VirtualMachine", &kubevirtv1.VirtualMachineList{}, []client.ListOption{sel, client.InNamespace(ns)}},
		{"Service", &corev1.ServiceList{}, []client.ListOption{sel, client.InNamespace(ns)}},
		{"PersistentVolumeClaim", &corev1.PersistentVolumeClaimList{}, []client.ListOption{sel, client.InNamespace(ns)}},
		// Every namespace: the production-side snapshots sit next to their PVCs.
		{"VolumeSnapshot", &snapshotv1.VolumeSnapshotList{}, []client.ListOption{sel}},
		{"VolumeSnapshotContent", &snapshotv1.VolumeSnapshotContentList{}, []client.ListOption{sel}},
		{"NetworkPolicy", &networkingv1.NetworkPolicyList{}, []client.ListOption{sel, client.InNamespace(ns)}},
	}
	var left []string
	for _, k := range kinds {
		if err := rc.Direct.List(ctx, k.list, k.opts...); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, remoteErr(cluster, "listing "+k.name+"s", err)
		}
		items, err := meta.ExtractList(k.list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			obj := item.(client.Object)
			left = append(left, k.name+" "+obj.GetNamespace()+"/"+obj.GetName())
			if obj.GetDeletionTimestamp() != nil {
				continue
			}
			if err := rc.Direct.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return nil, remoteErr(cluster, "deleting "+k.name+" "+obj.GetName(), err)
			}
		}
	}
	running, err := r.runningCopies(ctx, s, rc, left)
	if err != nil {
		return nil, err
	}
	left = append(left, running...)
	namespace := &corev1.Namespace{}
	err = rc.Direct.Get(ctx, client.ObjectKey{Name: ns}, namespace)
	switch {
	case client.IgnoreNotFound(err) != nil:
		return nil, remoteErr(cluster, "reading namespace "+ns, err)
	case err == nil && namespace.Labels[LabelUID] == string(s.tf.UID) && namespace.DeletionTimestamp == nil:
		if err := rc.Direct.Delete(ctx, namespace); client.IgnoreNotFound(err) != nil {
			return nil, remoteErr(cluster, "deleting namespace "+ns, err)
		}
	}
	return left, nil
}

// runningCopies lists the instances of test VMs that still exist: KubeVirt
// stops a deleted VM's instance after the VM is gone, and a copy that still
// runs is not cleaned up. The copies are named after the group's VMs, as
// the VM list of this pass (left), the recorded results and the group tell.
func (r *Reconciler) runningCopies(ctx context.Context, s *scope, rc *remote.Remote, left []string) ([]string, error) {
	names := map[string]bool{}
	for _, l := range left {
		if name, ok := strings.CutPrefix(l, "VirtualMachine "+s.namespace()+"/"); ok {
			names[name] = true
		}
	}
	for _, res := range s.tf.Status.Results {
		names[res.VM] = true
	}
	if s.group != nil {
		for _, vm := range s.group.Spec.VirtualMachines {
			names[vm.Name] = true
		}
	}
	var running []string
	for _, name := range sortedKeys(names) {
		vmi := &kubevirtv1.VirtualMachineInstance{}
		err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: s.namespace(), Name: name}, vmi)
		switch {
		case client.IgnoreNotFound(err) != nil:
			return nil, remoteErr(s.tf.Spec.TargetCluster, "reading VirtualMachineInstance "+name, err)
		case err == nil && vmi.Labels[LabelUID] == string(s.tf.UID):
			running = append(running, "VirtualMachineInstance "+vmi.Namespace+"/"+vmi.Name)
		}
	}
	return running, nil
}
