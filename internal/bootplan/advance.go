package bootplan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// JobState is what a step's or probe's Job shows.
type JobState int

const (
	// JobAbsent means no Job yet.
	JobAbsent JobState = iota
	// JobRunning means the Job exists and has no verdict.
	JobRunning
	// JobSucceeded means the Job completed.
	JobSucceeded
	// JobFailed means the Job failed (its message says why).
	JobFailed
)

// JobResult is a Job's state and, when it failed, why.
type JobResult struct {
	State   JobState
	Message string
}

// Facts is what the cluster shows of one VM.
type Facts struct {
	// Exists means the VirtualMachine exists.
	Exists bool
	// Ready means the VMI's Ready condition is True.
	Ready bool
	// AgentConnected means the VMI's AgentConnected condition is True.
	AgentConnected bool
	// Address is the VMI's first interface address, for a probe.
	Address string
	// Probe is the gate probe's Job of this boot.
	Probe JobResult
}

// StepKind tells a stage's two steps apart.
type StepKind string

const (
	// PreStart runs before the stage's VMs start.
	PreStart StepKind = "pre"
	// PostStart runs after they passed the gate.
	PostStart StepKind = "post"
)

// StepKey names one step of one stage.
type StepKey struct {
	Stage string
	Kind  StepKind
}

// Input is everything Advance decides on.
type Input struct {
	Plan   *srv1alpha1.BootPlan
	Stages []Stage
	// Facts per VM key.
	Facts map[string]Facts
	// Steps are the steps' Jobs of this boot.
	Steps map[StepKey]JobResult
	// Last is the status the previous reconcile wrote; nil starts a boot.
	Last *srv1alpha1.BootStatus
	Now  time.Time
}

// Probe is a gate probe the caller must make exist.
type Probe struct {
	VM      string
	Gate    srv1alpha1.BootGate
	Address string
	// Deadline is when the stage times out: the probe may retry until then.
	Deadline time.Time
}

// Step is a step the caller must make exist.
type Step struct {
	StepKey
	Spec *srv1alpha1.BootStep
	// Namespace is the stage's first VM's.
	Namespace string
	Deadline  time.Time
}

// Output is what the caller does and writes.
type Output struct {
	Status *srv1alpha1.BootStatus
	// Run are the VM keys that may run now.
	Run map[string]bool
	// Steps and Probes must exist (the caller creates those that do not).
	Steps  []Step
	Probes []Probe
	// After is when a stage times out, if one is under way: nothing on the
	// cluster wakes the group then.
	After time.Duration
}

// Advance runs the plan one step further from in.Last: every stage that can
// end now ends, and the first that cannot says what it waits for.
func Advance(in Input) Output {
	out := Output{Status: &srv1alpha1.BootStatus{}, Run: map[string]bool{}}
	if in.Last != nil {
		out.Status.StartTime = in.Last.StartTime
	}
	if out.Status.StartTime == nil {
		out.Status.StartTime = &metav1.Time{Time: in.Now}
	}
	last := map[string]srv1alpha1.BootStageStatus{}
	if in.Last != nil {
		for _, s := range in.Last.Stages {
			last[s.Name] = s
		}
	}
	stopAt := ""      // the stage whose end stops the plan
	underWay := false // a stage has not ended: the later ones wait
	for _, st := range in.Stages {
		ss, ok := last[st.Name]
		if !ok || (ss.Phase == srv1alpha1.StageSkipped && stopAt == "") {
			ss = srv1alpha1.BootStageStatus{Name: st.Name, Phase: srv1alpha1.StagePending}
		}
		ss.VirtualMachines = st.VMs
		switch {
		case stopAt != "":
			if ss.Phase == srv1alpha1.StagePending || ss.Phase == srv1alpha1.StageSkipped {
				ss = skipped(st, stopAt, in.Now)
			}
		case underWay:
			ss.Message = "waits for the stages before it"
		default:
			ss = out.advanceStage(in, st, ss)
			if !ended(ss.Phase) {
				underWay = true
			} else if ss.Phase != srv1alpha1.StageSucceeded && stopsPlan(in.Plan) {
				stopAt = st.Name
			}
		}
		if started(ss) {
			for _, vm := range st.VMs {
				out.Run[vm] = true
			}
		}
		out.Status.Stages = append(out.Status.Stages, ss)
	}
	out.Status.Stopped = stopAt != ""
	if !underWay {
		out.Status.CompletionTime = &metav1.Time{Time: in.Now}
		if in.Last != nil && in.Last.CompletionTime != nil {
			out.Status.CompletionTime = in.Last.CompletionTime
		}
	}
	return out
}

// advanceStage moves one stage as far as the facts allow.
func (out *Output) advanceStage(in Input, st Stage, ss srv1alpha1.BootStageStatus) srv1alpha1.BootStageStatus {
	if ended(ss.Phase) {
		return ss
	}
	if ss.Phase == srv1alpha1.StagePending {
		ss.StartTime = &metav1.Time{Time: in.Now}
		if len(st.VMs) == 0 {
			return end(ss, srv1alpha1.StageSucceeded, in.Now, "no VM of the group is in this stage; its steps did not run")
		}
		ss.Phase = srv1alpha1.StagePreStart
		if st.PreStart == nil {
			ss = asked(ss, in.Now)
		}
	}
	deadline := ss.StartTime.Add(time.Duration(timeoutOf(st)) * time.Second)
	if ss.Phase == srv1alpha1.StagePreStart {
		switch r := in.Steps[StepKey{st.Name, PreStart}]; r.State {
		case JobSucceeded:
			ss = asked(ss, in.Now)
		case JobFailed:
			return end(ss, srv1alpha1.StageFailed, in.Now, "pre-start step failed: %s; the stage's VMs were not started", r.Message)
		default:
			out.Steps = append(out.Steps, Step{StepKey: StepKey{st.Name, PreStart}, Spec: st.PreStart, Namespace: namespaceOf(st), Deadline: deadline})
			ss.Waiting = st.VMs
			return out.wait(ss, in.Now, deadline, "running the pre-start step")
		}
	}
	if ss.Phase == srv1alpha1.StageStarting {
		var why []string
		ss.Waiting = nil
		for _, vm := range st.VMs {
			if w := out.gate(in, st, vm, deadline); w != "" {
				ss.Waiting = append(ss.Waiting, vm)
				why = append(why, vm+" "+w)
			}
		}
		if len(why) > 0 {
			return out.wait(ss, in.Now, deadline, "waiting for the %s gate: %s", gateOf(st).Type, flow.ListedWith(why, "; "))
		}
		if st.PostStart == nil {
			return end(ss, srv1alpha1.StageSucceeded, in.Now, "every VM passed the %s gate", gateOf(st).Type)
		}
		ss.Phase = srv1alpha1.StagePostStart
	}
	// PostStart.
	switch r := in.Steps[StepKey{st.Name, PostStart}]; r.State {
	case JobSucceeded:
		return end(ss, srv1alpha1.StageSucceeded, in.Now, "every VM passed the %s gate and the post-start step succeeded", gateOf(st).Type)
	case JobFailed:
		return end(ss, srv1alpha1.StageFailed, in.Now, "post-start step failed: %s", r.Message)
	default:
		out.Steps = append(out.Steps, Step{StepKey: StepKey{st.Name, PostStart}, Spec: st.PostStart, Namespace: namespaceOf(st), Deadline: deadline})
		return out.wait(ss, in.Now, deadline, "running the post-start step")
	}
}

// wait keeps a stage under way until its deadline, then times it out.
func (out *Output) wait(ss srv1alpha1.BootStageStatus, now, deadline time.Time, format string, args ...any) srv1alpha1.BootStageStatus {
	msg := fmt.Sprintf(format, args...)
	if !now.Before(deadline) {
		return end(ss, srv1alpha1.StageTimedOut, now, "timed out after %s %s", deadline.Sub(ss.StartTime.Time).Round(time.Second), msg)
	}
	ss.Message = msg
	if left := deadline.Sub(now); out.After == 0 || left < out.After {
		out.After = left
	}
	return ss
}

// gate says what vm still waits for, or "" once it passed the stage's gate.
// Every gate needs the VMI Ready first; a probe then needs an address.
func (out *Output) gate(in Input, st Stage, vm string, deadline time.Time) string {
	f, g := in.Facts[vm], gateOf(st)
	switch {
	case !f.Exists:
		return "does not exist"
	case !f.Ready:
		return "is not Ready"
	}
	switch g.Type {
	case srv1alpha1.GateGuestAgent:
		if !f.AgentConnected {
			return "has no guest agent connected (is qemu-guest-agent running in the guest?)"
		}
	case srv1alpha1.GateTCP, srv1alpha1.GateHTTP:
		switch f.Probe.State {
		case JobSucceeded:
			return ""
		case JobFailed:
			return "failed its probe: " + f.Probe.Message
		}
		if f.Address == "" {
			return "has no address to probe yet"
		}
		out.Probes = append(out.Probes, Probe{VM: vm, Gate: g, Address: f.Address, Deadline: deadline})
		return fmt.Sprintf("has not answered %s on port %d yet", g.Type, g.Port)
	}
	return ""
}

func end(ss srv1alpha1.BootStageStatus, phase srv1alpha1.BootStagePhase, now time.Time, format string, args ...any) srv1alpha1.BootStageStatus {
	ss.Phase = phase
	ss.CompletionTime = &metav1.Time{Time: now}
	ss.Message = fmt.Sprintf(format, args...)
	if phase == srv1alpha1.StageSucceeded {
		ss.Waiting = nil
	}
	return ss
}

func skipped(st Stage, stopAt string, now time.Time) srv1alpha1.BootStageStatus {
	return srv1alpha1.BootStageStatus{
		Name: st.Name, Phase: srv1alpha1.StageSkipped, VirtualMachines: st.VMs, Waiting: st.VMs,
		CompletionTime: &metav1.Time{Time: now},
		Message: fmt.Sprintf("not started: stage %s did not succeed and the plan's onStageTimeout is Stop; %s stay%s stopped (set onStageTimeout: Continue, or start them by hand)",
			stopAt, flow.Listed(st.VMs), verbS(len(st.VMs))),
	}
}

// asked moves a stage to Starting: its VMs are asked to run from now on.
func asked(ss srv1alpha1.BootStageStatus, now time.Time) srv1alpha1.BootStageStatus {
	ss.Phase = srv1alpha1.StageStarting
	ss.VMsStartTime = &metav1.Time{Time: now}
	return ss
}

// started reports whether a stage's VMs were asked to run. Once asked they
// stay asked, whatever the stage's outcome: stopping a VM that is up would
// not undo what it did.
func started(ss srv1alpha1.BootStageStatus) bool {
	return ss.VMsStartTime != nil && ss.Phase != srv1alpha1.StageSkipped
}

func ended(p srv1alpha1.BootStagePhase) bool {
	return slices.Contains([]srv1alpha1.BootStagePhase{srv1alpha1.StageSucceeded, srv1alpha1.StageTimedOut, srv1alpha1.StageFailed, srv1alpha1.StageSkipped}, p)
}

func stopsPlan(p *srv1alpha1.BootPlan) bool {
	return p == nil || p.OnStageTimeout != srv1alpha1.StageTimeoutContinue
}

func timeoutOf(st Stage) int32 {
	if st.TimeoutSeconds > 0 {
		return st.TimeoutSeconds
	}
	return implicitTimeoutSeconds
}

func gateOf(st Stage) srv1alpha1.BootGate {
	g := st.Gate
	if g.Type == "" {
		g.Type = srv1alpha1.GateReady
	}
	return g
}

func namespaceOf(st Stage) string {
	if len(st.VMs) == 0 {
		return ""
	}
	ns, _, _ := strings.Cut(st.VMs[0], "/")
	return ns
}

// verbS is the third person's s for n subjects.
func verbS(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}
