package server

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// implicitStageTimeoutSeconds is the timeout of the implicit stage of a
// failover (docs/recovery-plans.md, "The implicit stage remaining").
const implicitStageTimeoutSeconds = 300

// bootPlanView is a group's boot plan as the group page shows it. A step
// shows its image only: its command, arguments and env are the user's to read
// with kubectl, and the console repeats none of them.
type bootPlanView struct {
	OnStageTimeout string          `json:"onStageTimeout"`
	Stages         []bootStageView `json:"stages"`
}

type bootStageView struct {
	Name            string   `json:"name"`
	VirtualMachines []string `json:"virtualMachines,omitempty"`
	// Selector is the label selector in kubectl's notation.
	Selector       string        `json:"selector,omitempty"`
	Gate           bootGateView  `json:"gate"`
	TimeoutSeconds int32         `json:"timeoutSeconds"`
	PreStart       *bootStepView `json:"preStart,omitempty"`
	PostStart      *bootStepView `json:"postStart,omitempty"`
	// Implicit marks the last stage, of the VMs no stage names.
	Implicit bool `json:"implicit,omitempty"`
}

type bootGateView struct {
	Type string `json:"type"`
	Port int32  `json:"port,omitempty"`
	Path string `json:"path,omitempty"`
}

type bootStepView struct {
	Image string `json:"image"`
}

// bootView is how a start ran, stage by stage: a failover's on its target,
// a test failover's over its test VMs.
type bootView struct {
	Start      *time.Time `json:"start,omitempty"`
	Completion *time.Time `json:"completion,omitempty"`
	Stopped    bool       `json:"stopped"`
	// StoppedAt is the stage that did not succeed and stopped the plan, with
	// how it ended; NotStarted the VMs the plan left stopped because of it.
	StoppedAt  string   `json:"stoppedAt,omitempty"`
	NotStarted []string `json:"notStarted,omitempty"`
	// Advice says what the operator does about a stopped plan.
	Advice string         `json:"advice,omitempty"`
	Stages []bootStageRun `json:"stages"`
}

type bootStageRun struct {
	Name            string     `json:"name"`
	Phase           string     `json:"phase"`
	VirtualMachines []string   `json:"virtualMachines,omitempty"`
	Waiting         []string   `json:"waiting,omitempty"`
	Start           *time.Time `json:"start,omitempty"`
	VMsStart        *time.Time `json:"vmsStart,omitempty"`
	End             *time.Time `json:"end,omitempty"`
	// DurationSeconds is absent for a stage that never started.
	DurationSeconds *float64 `json:"durationSeconds,omitempty"`
	Message         string   `json:"message,omitempty"`
}

// bootPlanOf is the plan of a group, its implicit stage last; nil without one.
func bootPlanOf(p *srv1alpha1.BootPlan) *bootPlanView {
	if p == nil {
		return nil
	}
	v := &bootPlanView{OnStageTimeout: string(p.OnStageTimeout), Stages: make([]bootStageView, 0, len(p.Stages)+1)}
	if v.OnStageTimeout == "" {
		v.OnStageTimeout = string(srv1alpha1.StageTimeoutStop)
	}
	for _, s := range p.Stages {
		sv := bootStageView{Name: s.Name, VirtualMachines: s.VirtualMachines, TimeoutSeconds: s.TimeoutSeconds,
			Gate:     bootGateView{Type: string(s.Gate.Type), Port: s.Gate.Port, Path: s.Gate.Path},
			PreStart: stepOf(s.PreStart), PostStart: stepOf(s.PostStart)}
		if sv.Gate.Type == "" {
			sv.Gate.Type = string(srv1alpha1.GateReady)
		}
		if sv.TimeoutSeconds == 0 {
			sv.TimeoutSeconds = implicitStageTimeoutSeconds
		}
		if s.Selector != nil {
			sv.Selector = metav1.FormatLabelSelector(s.Selector)
		}
		v.Stages = append(v.Stages, sv)
	}
	v.Stages = append(v.Stages, bootStageView{Name: srv1alpha1.ImplicitStageName, Implicit: true,
		Gate: bootGateView{Type: string(srv1alpha1.GateReady)}, TimeoutSeconds: implicitStageTimeoutSeconds})
	return v
}

func stepOf(s *srv1alpha1.BootStep) *bootStepView {
	if s == nil {
		return nil
	}
	return &bootStepView{Image: s.Image}
}

// bootOf is a request's boot; nil when there was none, or when only the
// implicit stage ran without stopping (a group without a plan), as the CLI
// shows it. split holds a failover's StartingOnTarget time per stage, which
// is preferred to the stages' own times (stored to the second).
func bootOf(b *srv1alpha1.BootStatus, split map[string]int64, kind string, now time.Time) *bootView {
	if b == nil || len(b.Stages) == 0 ||
		(len(b.Stages) == 1 && b.Stages[0].Name == srv1alpha1.ImplicitStageName && !b.Stopped) {
		return nil
	}
	v := &bootView{Start: timeOf(b.StartTime), Completion: timeOf(b.CompletionTime), Stopped: b.Stopped,
		Stages: make([]bootStageRun, 0, len(b.Stages))}
	for _, s := range b.Stages {
		r := bootStageRun{Name: s.Name, Phase: string(s.Phase), VirtualMachines: s.VirtualMachines, Waiting: s.Waiting,
			Start: timeOf(s.StartTime), VMsStart: timeOf(s.VMsStartTime), End: timeOf(s.CompletionTime), Message: s.Message}
		if ms, ok := split[s.Name]; ok && (ms > 0 || s.StartTime != nil) {
			d := float64(ms) / 1000
			r.DurationSeconds = &d
		} else if s.StartTime != nil {
			end := now
			if s.CompletionTime != nil {
				end = s.CompletionTime.Time
			}
			d := max(end.Sub(s.StartTime.Time).Seconds(), 0)
			r.DurationSeconds = &d
		}
		switch s.Phase {
		case srv1alpha1.StageTimedOut, srv1alpha1.StageFailed:
			if v.Stopped && v.StoppedAt == "" {
				v.StoppedAt = fmt.Sprintf("%s (%s)", s.Name, s.Phase)
			}
		case srv1alpha1.StageSkipped:
			v.NotStarted = append(v.NotStarted, s.VirtualMachines...)
		}
		v.Stages = append(v.Stages, r)
	}
	if v.Stopped {
		v.Advice = adviceFor(kind, v)
	}
	return v
}

// adviceFor says what the operator does about a stopped plan
// (docs/recovery-plans.md, "Failover, failback and the plan" and "Test
// failover and the plan").
func adviceFor(kind string, v *bootView) string {
	stage := strings.SplitN(v.StoppedAt, " ", 2)[0]
	if stage == "" {
		stage = "the stage that did not succeed"
	} else {
		stage = "stage " + stage
	}
	if kind == "TestFailover" {
		return "Fix what " + stage + " waited for (the gate's port or path, the VMs' readiness, a step's image), then run the test failover again."
	}
	return "The group stays on the target. Fix what " + stage + " waited for (the gate's port or path, the VMs' readiness, a step's image), " +
		"then start the VMs left stopped (virtctl start), or set spec.boot.onStageTimeout: Continue on the group so that its later stages start."
}

// stageSplit is a failover's StartingOnTarget time per boot stage.
func stageSplit(ts []srv1alpha1.PhaseTiming) map[string]int64 {
	out := map[string]int64{}
	for _, pt := range ts {
		if pt.Phase == string(srv1alpha1.FailoverStartingOnTarget) {
			for _, s := range pt.Stages {
				out[s.Stage] = s.Milliseconds
			}
		}
	}
	return out
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.Time
	return &v
}
