package pgsync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// loadSources reads the group's VMs on the active cluster. It only reads there:
// pg-sync never changes a VM on the active cluster but to put back its DR
// namespace label (relabel). When the active cluster cannot be read the
// standby VMs elsewhere are left as they are.
func (r *Reconciler) loadSources(ctx context.Context, s *scope) (ctrl.Result, error) {
	active := s.group.Spec.ActiveCluster
	rem, err := r.connect(s, active)
	if err != nil {
		s.sourcesErr = err
		return ctrl.Result{}, nil //nolint:nilerr // kept in s.sourcesErr: syncStandbys reports it as drift and leaves standbys alone
	}
	s.sources = map[string]*kubevirtv1.VirtualMachine{}
	s.foreign = map[string]string{}
	for _, ref := range s.group.Spec.VirtualMachines {
		vm, found, err := readVM(ctx, rem, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name})
		if err == nil && found {
			if other, ok := foreign(vm, s.group.Namespace); ok {
				s.foreign[vmKey(ref.Namespace, ref.Name)] = fmt.Sprintf("belongs to DR namespace %s (label %s)", other, srv1alpha1.DRNamespaceLabel)
				continue
			}
			vm, err = r.relabel(ctx, s, rem, vm)
		}
		if err != nil {
			s.sourcesErr = flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("cluster %s: reading VirtualMachine %s/%s: %w", active, ref.Namespace, ref.Name, err))
			return ctrl.Result{}, nil
		}
		if found {
			s.sources[vmKey(ref.Namespace, ref.Name)] = vm
		}
	}
	return ctrl.Result{}, nil
}

// syncStandbys creates or updates the standby VM of every group VM on a
// non-active cluster. A standby that runs is reported, never changed.
func (r *Reconciler) syncStandbys(ctx context.Context, s *scope, rem *remote.Remote, c *clusterResult) error {
	active := s.group.Spec.ActiveCluster
	if s.sourcesErr != nil {
		c.drift = append(c.drift, fmt.Sprintf("standby VMs not verified: cannot read the VMs of active cluster %s (%s)",
			active, flow.ReasonOf(s.sourcesErr, srv1alpha1.ReasonReadFailed)))
		return nil //nolint:nilerr // the unread sources are reported as drift, not as a reconcile error
	}
	labels := pgSyncLabels(s.group)
	for _, ref := range s.group.Spec.VirtualMachines {
		key := vmKey(ref.Namespace, ref.Name)
		src := s.sources[key]
		if src == nil {
			why := "not found"
			if f := s.foreign[key]; f != "" {
				why = f
			}
			c.drift = append(c.drift, fmt.Sprintf("VirtualMachine %s %s on active cluster %s; no standby built", key, why, active))
			continue
		}
		standby, found, err := readVM(ctx, rem, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name})
		other, isForeign := "", false
		var want kubevirtv1.VirtualMachineSpec
		if found {
			other, isForeign = foreign(standby, s.group.Namespace)
			want = s.wantStandby(src, standby, c.name)
		}
		switch {
		case err == nil && !found:
			vm := newStandby(src, labels)
			vm.Spec.Template = s.wantStandby(src, nil, c.name).Template
			vm.Labels[srv1alpha1.DRNamespaceLabel] = s.group.Namespace
			if err := r.createStandby(ctx, rem, vm); err != nil {
				return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: creating standby VirtualMachine %s: %w", c.name, key, err))
			}
			c.wrote = true
		case err != nil:
			return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("cluster %s: reading VirtualMachine %s: %w", c.name, key, err))
		case isForeign:
			c.drift = append(c.drift, fmt.Sprintf("VirtualMachine %s on non-active cluster %s belongs to DR namespace %s (label %s); left untouched",
				key, c.name, other, srv1alpha1.DRNamespaceLabel))
		case vmActive(standby):
			c.drift = append(c.drift, fmt.Sprintf("VirtualMachine %s is %s on non-active cluster %s while %s is active; left untouched",
				key, printable(standby), c.name, active))
		case standbyInSync(standby, want, labels) && standby.Labels[srv1alpha1.DRNamespaceLabel] == s.group.Namespace:
		default:
			if standby, err = r.relabel(ctx, s, rem, standby); err != nil {
				return flow.Transient(srv1alpha1.ReasonWriteFailed, err)
			}
			c.wrote = true
			if standbyInSync(standby, want, labels) {
				continue
			}
			updated := standby.DeepCopy()
			setStandbySpec(updated, want, labels)
			patch := client.MergeFromWithOptions(standby, client.MergeFromWithOptimisticLock{})
			if err := rem.Direct.Patch(ctx, updated, patch, client.FieldOwner(FieldOwner)); err != nil {
				return flow.Transient(srv1alpha1.ReasonWriteFailed, fmt.Errorf("cluster %s: updating standby VirtualMachine %s: %w", c.name, key, err))
			}
			c.wrote = true
		}
	}
	return nil
}

// claimStandby labels a standby that lacks it with the group's DR namespace,
// in a patch of its own: the workload chart's guard lets a quorum identity
// change only what carries its DR namespace's label, and add that label to a
// VM only in a patch that changes nothing else (a standby pg-sync made before
// it labelled them, or a VM that ran there before the group failed over).
func claimStandby(ctx context.Context, rem *remote.Remote, vm *kubevirtv1.VirtualMachine, drNamespace string) (*kubevirtv1.VirtualMachine, error) {
	if vm.Labels[srv1alpha1.DRNamespaceLabel] == drNamespace {
		return vm, nil
	}
	claimed := vm.DeepCopy()
	if claimed.Labels == nil {
		claimed.Labels = map[string]string{}
	}
	claimed.Labels[srv1alpha1.DRNamespaceLabel] = drNamespace
	if err := rem.Direct.Patch(ctx, claimed, client.MergeFromWithOptions(vm, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return nil, err
	}
	return claimed, nil
}

// createStandby creates vm, and its namespace when the cluster lacks it.
func (r *Reconciler) createStandby(ctx context.Context, rem *remote.Remote, vm *kubevirtv1.VirtualMachine) error {
	err := rem.Direct.Create(ctx, vm, client.FieldOwner(FieldOwner))
	if apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vm.Namespace}}
		if nerr := rem.Direct.Create(ctx, ns, client.FieldOwner(FieldOwner)); nerr != nil && !apierrors.IsAlreadyExists(nerr) {
			return fmt.Errorf("creating namespace %s: %w", vm.Namespace, nerr)
		}
		err = rem.Direct.Create(ctx, vm, client.FieldOwner(FieldOwner))
	}
	if apierrors.IsAlreadyExists(err) {
		// Created since the cache was read; the watch event brings it back.
		return nil
	}
	return err
}

func printable(vm *kubevirtv1.VirtualMachine) string {
	if vm.Status.PrintableStatus == "" {
		return "active"
	}
	return string(vm.Status.PrintableStatus)
}
