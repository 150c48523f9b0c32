package testfailover

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/bootplan"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// advanceBoot runs the group's boot plan one step further over the test VMs,
// with the planner pg-controller runs on a real start: it reads the test VMs'
// instances and the boot's Jobs, creates the Jobs the plan asks for in the
// isolated namespace, and records the boot in status.boot. names are the
// group's VMs (the test VMs' names), vms the test VMs that exist. The plan's
// state lives in status.boot, so a restarted quorum-manager resumes it.
func (r *Reconciler) advanceBoot(ctx context.Context, s *scope, rc *remote.Remote, names []string, vms map[string]*kubevirtv1.VirtualMachine) (bootplan.Output, error) {
	ns, cluster := s.namespace(), s.tf.Spec.TargetCluster
	plan := testPlan(s.group, ns)
	list := make([]bootplan.VM, 0, len(names))
	for _, name := range names {
		v := bootplan.VM{Key: ns + "/" + name}
		if selects(plan) {
			// A selector matches the group VM's labels, which the standby
			// carries; the test VM has the test's own.
			standby := &kubevirtv1.VirtualMachine{}
			if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: s.vmRef(name), Name: name}, standby); err != nil {
				return bootplan.Output{}, remoteErr(cluster, "reading standby VM "+name, err)
			}
			v.Labels = standby.Labels
		}
		list = append(list, v)
	}
	stages, err := bootplan.Stages(plan, list)
	if err != nil {
		return bootplan.Output{}, invalid(srv1alpha1.ReasonInvalidSpec, "spec.boot of group %s: %v", s.group.Name, err)
	}
	for i := range stages {
		if stages[i].Name == srv1alpha1.ImplicitStageName {
			// The VMs no stage names start at once, as every test VM did
			// before plans: vmReadyTimeoutSeconds bounds them.
			stages[i].TimeoutSeconds = int32(s.vmReadyTimeout() / time.Second)
		}
	}
	id := bootID(s.tf)
	jobs, err := r.bootJobs(ctx, s, rc, id)
	if err != nil {
		return bootplan.Output{}, err
	}
	in := bootplan.Input{Plan: plan, Stages: stages, Facts: map[string]bootplan.Facts{},
		Steps: map[bootplan.StepKey]bootplan.JobResult{}, Last: s.tf.Status.Boot, Now: s.now}
	for _, v := range list {
		name := strings.TrimPrefix(v.Key, ns+"/")
		f := bootplan.Facts{Probe: bootplan.Verdict(jobs[bootplan.ProbeJobName(id, v.Key)])}
		if vms[name] != nil {
			f.Exists = true
			if err := r.instanceFacts(ctx, s, rc, name, &f); err != nil {
				return bootplan.Output{}, err
			}
		}
		in.Facts[v.Key] = f
	}
	for _, st := range stages {
		for _, k := range []bootplan.StepKind{bootplan.PreStart, bootplan.PostStart} {
			key := bootplan.StepKey{Stage: st.Name, Kind: k}
			in.Steps[key] = bootplan.Verdict(jobs[bootplan.StepJobName(id, key)])
		}
	}
	out := bootplan.Advance(in)
	s.tf.Status.Boot = out.Status
	for _, st := range out.Steps {
		if err := r.createBootJob(ctx, s, rc, r.stepJob(s, id, st)); err != nil {
			return bootplan.Output{}, err
		}
	}
	for _, p := range out.Probes {
		if err := r.createBootJob(ctx, s, rc, r.gateJob(s, id, p)); err != nil {
			return bootplan.Output{}, err
		}
	}
	return out, nil
}

// testPlan is the group's plan over the test VMs: an entry "namespace/name"
// names a production VM, whose test copy is "<isolated namespace>/name"; an
// entry "name" names it already.
func testPlan(group *srv1alpha1.ProtectionGroup, ns string) *srv1alpha1.BootPlan {
	if group.Spec.Boot == nil {
		return nil
	}
	plan := group.Spec.Boot.DeepCopy()
	for i := range plan.Stages {
		st := &plan.Stages[i]
		for j, entry := range st.VirtualMachines {
			prodNS, name, ok := strings.Cut(entry, "/")
			if ok && slices.ContainsFunc(group.Spec.VirtualMachines, func(ref srv1alpha1.VirtualMachineReference) bool {
				return ref.Namespace == prodNS && ref.Name == name
			}) {
				st.VirtualMachines[j] = ns + "/" + name
			}
		}
	}
	return plan
}

func selects(plan *srv1alpha1.BootPlan) bool {
	return plan != nil && slices.ContainsFunc(plan.Stages, func(st srv1alpha1.BootStage) bool { return st.Selector != nil })
}

// bootID names the test's one boot: its Jobs' names and LabelBoot.
func bootID(tf *srv1alpha1.TestFailover) string {
	return bootplan.BootID(string(tf.UID), time.Time{})
}

// instanceFacts reads what the gates look at from the test VM's instance:
// its Ready and AgentConnected conditions and its first interface address.
func (r *Reconciler) instanceFacts(ctx context.Context, s *scope, rc *remote.Remote, name string, f *bootplan.Facts) error {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	switch err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: s.namespace(), Name: name}, vmi); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return remoteErr(s.tf.Spec.TargetCluster, "reading VMI "+name, err)
	}
	f.ReadInstance(vmi)
	return nil
}

// bootJobs are the Jobs of the test's boot, by name.
func (r *Reconciler) bootJobs(ctx context.Context, s *scope, rc *remote.Remote, id string) (map[string]*batchv1.Job, error) {
	list := &batchv1.JobList{}
	if err := rc.Direct.List(ctx, list, client.InNamespace(s.namespace()), client.MatchingLabels{LabelUID: string(s.tf.UID), bootplan.LabelBoot: id}); err != nil {
		return nil, remoteErr(s.tf.Spec.TargetCluster, "listing the boot plan's Jobs", err)
	}
	out := make(map[string]*batchv1.Job, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// stepJob is a stage's step as bootplan.StepJob makes it, run in the isolated
// namespace, where the production namespace's service account does not
// exist, and without a token: the workload chart's guard admits no pod of
// quorum-manager's that mounts one, and a step of a test has nothing to
// change outside it.
func (r *Reconciler) stepJob(s *scope, id string, st bootplan.Step) *batchv1.Job {
	job := bootplan.StepJob(s.group.Name, id, st, s.now)
	job.Spec.Template.Spec.ServiceAccountName = ""
	job.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(false)
	return testLabelled(s, job, "")
}

// gateJob is a test VM's TCP or HTTP gate probe, as bootplan.ProbeJob makes
// it, run by the probe image in the isolated namespace.
func (r *Reconciler) gateJob(s *scope, id string, p bootplan.Probe) *batchv1.Job {
	job := bootplan.ProbeJob(s.group.Name, id, s.namespace(), r.probeImage(), p, s.now)
	return testLabelled(s, job, strings.TrimPrefix(p.VM, s.namespace()+"/"))
}

// testLabelled gives a boot Job and its pod the test's labels, by which the
// cleanup deletes it (and the workload chart's guard lets quorum-manager
// delete it). The group label is dropped: pg-controller deletes the Jobs of
// its group's boots by that label when the group stops, and the DR copy of a
// group under test is stopped. The probe Service does not select the pod
// (LabelComponent is ComponentBoot).
func testLabelled(s *scope, job *batchv1.Job, vm string) *batchv1.Job {
	for _, l := range []map[string]string{job.Labels, job.Spec.Template.Labels} {
		delete(l, srv1alpha1.ProtectionGroupLabel)
		maps.Copy(l, componentLabels(s.tf, vm, ComponentBoot))
	}
	return job
}

func (r *Reconciler) createBootJob(ctx context.Context, s *scope, rc *remote.Remote, job *batchv1.Job) error {
	if err := rc.Direct.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return remoteErr(s.tf.Spec.TargetCluster, "creating boot Job "+job.Name, err)
	}
	return nil
}

func (r *Reconciler) probeImage() string {
	if r.ProbeImage != "" {
		return r.ProbeImage
	}
	return DefaultProbeImage
}

// vmsStart is when the plan asked vm's test VM to run, nil if it has not.
func vmsStart(st *srv1alpha1.BootStatus, key string) *time.Time {
	for _, ss := range st.Stages {
		if slices.Contains(ss.VirtualMachines, key) && ss.VMsStartTime != nil && ss.Phase != srv1alpha1.StageSkipped {
			return &ss.VMsStartTime.Time
		}
	}
	return nil
}

// notStarted says why an ended boot never started vm's test VM: the stage
// that stopped the plan, or its own stage's end.
func notStarted(st *srv1alpha1.BootStatus, key string) string {
	stop := ""
	for _, ss := range st.Stages {
		failed := ss.Phase == srv1alpha1.StageTimedOut || ss.Phase == srv1alpha1.StageFailed
		if stop == "" && failed {
			stop = fmt.Sprintf("%s did not succeed (%s: %s)", ss.Name, ss.Phase, ss.Message)
		}
		if !slices.Contains(ss.VirtualMachines, key) {
			continue
		}
		if ss.Phase == srv1alpha1.StageSkipped && stop != "" {
			return "not started: boot stage " + stop + " and the plan's onStageTimeout is Stop"
		}
		return fmt.Sprintf("not started: boot stage %s %s: %s", ss.Name, ss.Phase, ss.Message)
	}
	return "not started: the boot plan has no stage for it"
}

// bootUnderWay is the message of the stage the boot waits on, "" when the
// boot ended.
func bootUnderWay(st *srv1alpha1.BootStatus) string {
	if st == nil || st.CompletionTime != nil {
		return ""
	}
	for _, ss := range st.Stages {
		switch ss.Phase {
		case srv1alpha1.StagePreStart, srv1alpha1.StageStarting, srv1alpha1.StagePostStart:
			return fmt.Sprintf("boot stage %s: %s", ss.Name, ss.Message)
		}
	}
	return "boot plan under way"
}

// bootStopped is the note a failed verdict carries when the plan stopped
// before starting some of the test VMs.
func bootStopped(st *srv1alpha1.BootStatus) string {
	if st == nil || !st.Stopped {
		return ""
	}
	stop := -1
	for i, ss := range st.Stages {
		if stop < 0 && (ss.Phase == srv1alpha1.StageTimedOut || ss.Phase == srv1alpha1.StageFailed) {
			stop = i
		}
		if stop >= 0 && (ss.Phase == srv1alpha1.StageSkipped || ss.VMsStartTime == nil) {
			return fmt.Sprintf("; the boot plan stopped at stage %s (%s)", st.Stages[stop].Name, st.Stages[stop].Phase)
		}
	}
	return ""
}
