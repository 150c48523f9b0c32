package protection

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// locate decides which cluster the VM stays on and whether removing protection
// may go on (see the package comment). While the VM is a member of its quorum
// group the group's activeCluster decides; once it left, the decision recorded
// in ConditionUnprotecting does, so that a removal that already stopped the VM
// on one cluster never changes its mind. Either way a VM that runs on the DR
// cluster makes it the DR cluster. No removal runs while a failover of the group
// is in progress.
func (r *Reconciler) locate(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !reached(s.req, srv1alpha1.ProtectionAddingToGroup) {
		// Never in a group, so never failed over: the VM is on the primary.
		s.decide(s.primaryCluster)
		return ctrl.Result{}, nil
	}
	group, err := r.quorumGroup(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	stay := s.decided()
	if group != nil {
		if name, err := r.failoverInProgress(ctx, s, group.Name); err != nil || name != "" {
			if err == nil {
				err = flow.Waiting(ReasonFailoverInProgress, 0, "FailoverRequest %s of group %s is in progress; removing protection of VirtualMachine %s resumes once it ended",
					name, group.Name, s.vmKey())
			}
			return ctrl.Result{}, err
		}
		if slices.Contains(group.Spec.VirtualMachines, s.req.Spec.VirtualMachine) {
			stay = cmp.Or(group.Spec.ActiveCluster, s.primaryCluster)
		}
	}
	if stay == "" || stay == s.primaryCluster {
		stay = s.primaryCluster
		runs, err := r.runsOn(ctx, s, s.sides()[1])
		if err != nil {
			return ctrl.Result{}, err
		}
		if runs {
			stay = s.target
		}
	}
	switch {
	case stay == s.primaryCluster:
	case stay != s.target:
		return ctrl.Result{}, flow.Waiting(ReasonFailedOver, 0, "group %s is active on %s, which holds no replica of VirtualMachine %s (replicated between %s and %s); fail the group over to %s first",
			s.req.Spec.ProtectionGroupRef.Name, stay, s.vmKey(), s.primaryCluster, s.target, s.primaryCluster)
	case !forced(s.req):
		return ctrl.Result{}, flow.Waiting(ReasonFailedOver, 0, "VirtualMachine %s runs on DR cluster %s (group %s is failed over): fail back to %s first, or, to remove replication and keep the VM running on %s, annotate this ProtectionRequest with %s=true and %s=%s (the disaster-operator role: kubectl siterecovery unprotect %s --force --confirm %s)",
			s.vmKey(), s.target, s.req.Spec.ProtectionGroupRef.Name, s.primaryCluster, s.target, srv1alpha1.ForceUnprotectAnnotation, srv1alpha1.ConfirmAnnotation, s.req.Spec.VirtualMachine.Name, s.vmKey(), s.req.Spec.VirtualMachine.Name)
	}
	s.decide(stay)
	return ctrl.Result{}, nil
}

// decide records which cluster the VM stays on.
func (s *scope) decide(cluster string) {
	s.stayOn = cluster
	if cluster == s.target {
		setCondition(s.req, ConditionUnprotecting, metav1.ConditionTrue, ReasonStaysOnDR,
			"removing replication; VirtualMachine %s stays on %s (forced with %s)", s.vmKey(), s.target, srv1alpha1.ForceUnprotectAnnotation)
		return
	}
	setCondition(s.req, ConditionUnprotecting, metav1.ConditionTrue, ReasonStaysOnPrimary,
		"removing protection; VirtualMachine %s goes back to its original PVCs on %s", s.vmKey(), s.primaryCluster)
}

// decided is the cluster an earlier pass decided the VM stays on, or "".
func (s *scope) decided() string {
	c := meta.FindStatusCondition(s.req.Status.Conditions, ConditionUnprotecting)
	switch {
	case c == nil:
		return ""
	case c.Reason == ReasonStaysOnDR:
		return s.target
	case c.Reason == ReasonStaysOnPrimary:
		return s.primaryCluster
	}
	return ""
}

func forced(req *srv1alpha1.ProtectionRequest) bool {
	return req.Annotations[srv1alpha1.ForceUnprotectAnnotation] == "true"
}

// quorumGroup reads the request's group without the cache; nil when it is gone.
func (r *Reconciler) quorumGroup(ctx context.Context, s *scope) (*srv1alpha1.ProtectionGroup, error) {
	g := &srv1alpha1.ProtectionGroup{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.req.Namespace, Name: s.req.Spec.ProtectionGroupRef.Name}, g)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, flow.Transient(ReasonRequestFailed, fmt.Errorf("reading ProtectionGroup %s: %w", s.req.Spec.ProtectionGroupRef.Name, err))
	}
	return g, nil
}

// failoverInProgress names an unfinished FailoverRequest of group, or "".
func (r *Reconciler) failoverInProgress(ctx context.Context, s *scope, group string) (string, error) {
	list := &srv1alpha1.FailoverRequestList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.req.Namespace)); err != nil {
		return "", flow.Transient(ReasonRequestFailed, fmt.Errorf("listing FailoverRequests: %w", err))
	}
	for _, f := range list.Items {
		if f.Spec.ProtectionGroupRef.Name == group && f.Status.Phase != srv1alpha1.FailoverCompleted && f.Status.Phase != srv1alpha1.FailoverFailed {
			return f.Name, nil
		}
	}
	return "", nil
}

// runsOn reports whether the VM of that name runs, or is asked to run, on a side.
func (r *Reconciler) runsOn(ctx context.Context, s *scope, sd side) (bool, error) {
	vm := &kubevirtv1.VirtualMachine{}
	switch err := sd.rc.Direct.Get(ctx, s.vmKey(), vm); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, remoteErr(sd.cluster, "reading VirtualMachine "+s.vmKey().String(), err)
	}
	return wantsRunning(vm) || vm.Status.Created || vm.Status.Ready, nil
}
