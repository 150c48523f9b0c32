package pgsync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// readVM reads a VM of the group on a cluster. The remote cache holds only
// what carries the DR namespace's label, so a VM missing there is read
// directly: one whose label was removed by hand, or that an older release
// never labelled, exists all the same, and is not to be taken for deleted
// (pg-sync would otherwise report the source gone, or build a second standby).
// found is false only when the cluster itself has no such VM.
func readVM(ctx context.Context, rem *remote.Remote, key client.ObjectKey) (vm *kubevirtv1.VirtualMachine, found bool, err error) {
	vm = &kubevirtv1.VirtualMachine{}
	err = rem.Cached.Get(ctx, key, vm)
	if !apierrors.IsNotFound(err) {
		return vm, err == nil, err
	}
	vm = &kubevirtv1.VirtualMachine{}
	switch err := rem.Direct.Get(ctx, key, vm); {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return vm, true, nil
}

// relabel puts the DR namespace label back on a VM of the group that lost it,
// in a patch of its own (the workload chart's guard lets a quorum identity
// add that label to an unlabelled VM only alone), and says so in an event on
// the group: until it is back, this DR namespace's caches do not see the VM
// change. A VM labelled for another DR namespace is not this one's to take:
// the caller reports it.
func (r *Reconciler) relabel(ctx context.Context, s *scope, rem *remote.Remote, vm *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, error) {
	if vm.Labels[srv1alpha1.DRNamespaceLabel] == s.group.Namespace {
		return vm, nil
	}
	claimed, err := claimStandby(ctx, rem, vm, s.group.Namespace)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: putting label %s=%s back on VirtualMachine %s/%s: %w",
			rem.Key.Cluster, srv1alpha1.DRNamespaceLabel, s.group.Namespace, vm.Namespace, vm.Name, err)
	}
	r.Recorder.Eventf(s.group, corev1.EventTypeWarning, reasonRelabelled,
		"VirtualMachine %s/%s on cluster %s did not carry its label %s (removed by hand, or never put on by an older release); pg-sync put it back: remove the VM from the group to release it",
		vm.Namespace, vm.Name, rem.Key.Cluster, srv1alpha1.DRNamespaceLabel)
	return claimed, nil
}

// foreign reports whether vm is labelled for another DR namespace.
func foreign(vm *kubevirtv1.VirtualMachine, drNamespace string) (string, bool) {
	other := vm.Labels[srv1alpha1.DRNamespaceLabel]
	return other, other != "" && other != drNamespace
}
