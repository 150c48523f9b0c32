package protectiongroup

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/bootplan"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// DefaultProbeImage runs the boot gates' probes: the siterecovery-probe image
// that test failover's probes run too.
const DefaultProbeImage = "ghcr.io/siterecovery/siterecovery-probe:0.1.0"

// runBootPlan runs the group's boot plan one step further and returns the
// VMs that may run now; nil lets every VM run (a group without a plan starts
// them all at once, and reports no boot). The plan's state lives in
// status.boot alone, so a restarted controller goes on from where the last
// one wrote it.
func (r *Reconciler) runBootPlan(ctx context.Context, s *scope) (map[string]bool, error) {
	last := s.before.Status.Boot
	s.bootSet = true
	if s.group.Spec.Boot == nil || (last == nil && s.before.Status.CurrentState == srv1alpha1.StateRunning && allRunning(s)) {
		// No plan, or one added to a group that already ran: there is no
		// start to order. A group whose VMs all came up before its first
		// boot status was written (the write waits while they settle) is
		// not one: it reported another state.
		return nil, nil
	}
	vms := make([]bootplan.VM, 0, len(s.vms))
	for _, v := range s.vms {
		bv := bootplan.VM{Key: v.key()}
		if v.vm != nil {
			bv.Labels = v.vm.Labels
		}
		vms = append(vms, bv)
	}
	stages, err := bootplan.Stages(s.group.Spec.Boot, vms)
	if err != nil {
		// The admission webhook refuses such a plan; one written past it
		// starts nothing until it is fixed.
		return nil, flow.Stalled(srv1alpha1.ReasonInvalidSpec, "spec.boot: %w; fix the plan", err)
	}
	start := s.now
	if last != nil && last.StartTime != nil {
		start = last.StartTime.Time
	}
	id := bootplan.BootID(string(s.group.UID), start)
	jobs, err := r.bootJobs(ctx, s, id)
	if err != nil {
		return nil, err
	}
	in := bootplan.Input{Plan: s.group.Spec.Boot, Stages: stages, Facts: map[string]bootplan.Facts{},
		Steps: map[bootplan.StepKey]bootplan.JobResult{}, Last: last, Now: s.now}
	for _, v := range s.vms {
		f := v.instance
		f.Exists, f.Probe = v.vm != nil, bootplan.Verdict(jobs[bootplan.ProbeJobName(id, v.key())])
		in.Facts[v.key()] = f
	}
	for _, st := range stages {
		for _, k := range []bootplan.StepKind{bootplan.PreStart, bootplan.PostStart} {
			key := bootplan.StepKey{Stage: st.Name, Kind: k}
			in.Steps[key] = bootplan.Verdict(jobs[bootplan.StepJobName(id, key)])
		}
	}
	out := bootplan.Advance(in)
	s.boot, s.bootAfter = out.Status, out.After
	for _, st := range stages {
		if len(st.Unknown) > 0 {
			s.holds = append(s.holds, fmt.Sprintf("boot stage %s names %s, no VM of the group", st.Name, flow.Listed(st.Unknown)))
		}
	}
	if hold := bootHold(out.Status); hold != "" {
		s.holds = append(s.holds, hold)
	}
	if last == nil || last.StartTime == nil {
		// A new boot. Its Jobs are named by its start, which is stored
		// first: a Job created before a crash that lost the status would
		// otherwise run again under the next start's name.
		s.bootAfter = newBootRequeue
		return out.Run, nil
	}
	for _, st := range out.Steps {
		if err := r.createBootJob(ctx, s, bootplan.StepJob(s.group.Name, id, st, s.now)); err != nil {
			return nil, err
		}
	}
	for _, p := range out.Probes {
		ns, _, _ := strings.Cut(p.VM, "/")
		if err := r.createBootJob(ctx, s, bootplan.ProbeJob(s.group.Name, id, ns, r.probeImage(), p, s.now)); err != nil {
			return nil, err
		}
	}
	return out.Run, nil
}

// endBoot clears the boot of a group asked to stop, and deletes its Jobs.
func (r *Reconciler) endBoot(ctx context.Context, s *scope) error {
	s.bootSet = true
	if s.before.Status.Boot == nil && s.group.Spec.Boot == nil {
		return nil
	}
	return r.deleteBootJobs(ctx, s)
}

func allRunning(s *scope) bool {
	for _, v := range s.vms {
		if !v.running() {
			return false
		}
	}
	return len(s.vms) > 0
}

// groupOfJob maps a boot's Job to its group.
func groupOfJob(_ context.Context, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	if l[bootplan.LabelBoot] == "" || l[srv1alpha1.DRNamespaceLabel] == "" || l[srv1alpha1.ProtectionGroupLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l[srv1alpha1.DRNamespaceLabel], Name: l[srv1alpha1.ProtectionGroupLabel]}}}
}

// newBootRequeue is how soon a new boot, its start stored, creates its Jobs.
const newBootRequeue = 100 * time.Millisecond

// bootJobs are the Jobs of boot id, by name.
func (r *Reconciler) bootJobs(ctx context.Context, s *scope, id string) (map[string]*batchv1.Job, error) {
	list := &batchv1.JobList{}
	if err := r.Client.List(ctx, list, readOnly, client.MatchingLabels{bootplan.LabelBoot: id}); err != nil {
		return nil, flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("listing the Jobs of group %s's boot: %w", s.group.Name, err))
	}
	out := make(map[string]*batchv1.Job, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// createBootJob creates a step's or probe's Job, labelled with the group's
// namespace so that its events reach the group (groupOfJob).
func (r *Reconciler) createBootJob(ctx context.Context, s *scope, job *batchv1.Job) error {
	job.Labels[srv1alpha1.DRNamespaceLabel] = s.group.Namespace
	job.Spec.Template.Labels[srv1alpha1.DRNamespaceLabel] = s.group.Namespace
	switch err := r.Client.Create(ctx, job); {
	case err == nil:
		s.asked = true
		r.Recorder.Eventf(s.group, "Normal", "BootJobCreated", "created Job %s/%s (%s of boot %s)", job.Namespace, job.Name, job.Labels[bootplan.LabelKind], job.Labels[bootplan.LabelBoot])
	case apierrors.IsAlreadyExists(err):
	default:
		return flow.Transient(srv1alpha1.ReasonPatchFailed, fmt.Errorf("creating Job %s/%s of the boot plan: %w", job.Namespace, job.Name, err))
	}
	return nil
}

// deleteBootJobs deletes the Jobs of the group's boots once it is asked to
// stop: the next start is a new boot, with Jobs of its own.
func (r *Reconciler) deleteBootJobs(ctx context.Context, s *scope) error {
	list := &batchv1.JobList{}
	if err := r.Client.List(ctx, list, readOnly, client.MatchingLabels{
		srv1alpha1.ProtectionGroupLabel: s.group.Name, srv1alpha1.DRNamespaceLabel: s.group.Namespace}); err != nil {
		return flow.Transient(srv1alpha1.ReasonReadFailed, fmt.Errorf("listing the Jobs of group %s's boots: %w", s.group.Name, err))
	}
	for i := range list.Items {
		if _, ok := list.Items[i].Labels[bootplan.LabelBoot]; !ok {
			continue
		}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}}
		if err := r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return flow.Transient(srv1alpha1.ReasonPatchFailed, fmt.Errorf("deleting Job %s/%s of an earlier boot: %w", job.Namespace, job.Name, err))
		}
	}
	return nil
}

// bootHold is the Ready condition's note for a boot under way or stopped.
func bootHold(st *srv1alpha1.BootStatus) string {
	for _, ss := range st.Stages {
		switch ss.Phase {
		case srv1alpha1.StagePreStart, srv1alpha1.StageStarting, srv1alpha1.StagePostStart:
			return fmt.Sprintf("boot stage %s: %s", ss.Name, ss.Message)
		case srv1alpha1.StageTimedOut, srv1alpha1.StageFailed:
			if st.Stopped {
				return fmt.Sprintf("boot plan stopped: stage %s %s: %s", ss.Name, ss.Phase, ss.Message)
			}
		}
	}
	return ""
}

// heldBy names the boot stage a VM that may not run yet waits for.
func heldBy(st *srv1alpha1.BootStatus, vm string) string {
	for _, ss := range st.Stages {
		for _, k := range ss.VirtualMachines {
			if k != vm {
				continue
			}
			if ss.Phase == srv1alpha1.StageSkipped {
				return "not started: the boot plan stopped before stage " + ss.Name
			}
			return "waiting for boot stage " + ss.Name
		}
	}
	return ""
}

func (r *Reconciler) probeImage() string {
	if r.ProbeImage != "" {
		return r.ProbeImage
	}
	return DefaultProbeImage
}
