package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// BootStageState is one stage of the boot plan a FailoverRequest follows on
// its target, as the request copied it from the target's copy of the group.
type BootStageState struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	// Milliseconds the stage took: from its start to its end, to the end of
	// StartingOnTarget for a stage that had not ended then, or so far for a
	// stage under way. 0 for a stage that never started.
	Milliseconds int64    `json:"milliseconds,omitempty"`
	Waiting      []string `json:"waiting,omitempty"`
	Message      string   `json:"message,omitempty"`
}

// bootStageStates are the stages of the request's boot, each with its time:
// the request's split of StartingOnTarget once that phase ended, else the
// stage's own times, up to now for one under way.
func bootStageStates(st *srv1alpha1.FailoverRequestStatus, now time.Time) []BootStageState {
	if st.Boot == nil {
		return nil
	}
	split := map[string]int64{}
	for _, pt := range st.PhaseTimings {
		if pt.Phase == string(srv1alpha1.FailoverStartingOnTarget) {
			for _, s := range pt.Stages {
				split[s.Stage] = s.Milliseconds
			}
		}
	}
	out := make([]BootStageState, 0, len(st.Boot.Stages))
	for _, ss := range st.Boot.Stages {
		b := BootStageState{Name: ss.Name, Phase: string(ss.Phase), Waiting: ss.Waiting, Message: ss.Message}
		if ms, ok := split[ss.Name]; ok {
			b.Milliseconds = ms
		} else if ss.StartTime != nil {
			end := now
			if ss.CompletionTime != nil {
				end = ss.CompletionTime.Time
			}
			b.Milliseconds = max(end.Sub(ss.StartTime.Time), 0).Milliseconds()
		}
		out = append(out, b)
	}
	return out
}

// took is a stage's duration, "" (shown as "-") for one that never started.
func (b BootStageState) took() string {
	if b.Milliseconds == 0 && (b.Phase == string(srv1alpha1.StagePending) || b.Phase == string(srv1alpha1.StageSkipped)) {
		return ""
	}
	return ms(b.Milliseconds)
}

// bootTable prints a request's boot stages, one row per stage, after its
// timeline.
func bootTable(w io.Writer, stages []BootStageState, stopped bool) {
	if len(stages) == 0 {
		return
	}
	fmt.Fprintln(w, "\nBoot stages on the target:")
	t := newTable(w, "STAGE", "PHASE", "TOOK", "WAITING", "MESSAGE")
	for _, s := range stages {
		t.row(s.Name, s.Phase, s.took(), strings.Join(s.Waiting, ","), s.Message)
	}
	_ = t.flush()
	if stopped {
		fmt.Fprintln(w, "the boot plan stopped: the stages after the one that did not succeed were not started")
	}
}

// bootLines is one line per stage for the notes under the status tables:
// its phase, its time and the VMs it waits for.
func bootLines(stages []BootStageState) []string {
	out := make([]string, 0, len(stages))
	for _, s := range stages {
		line := "boot stage " + s.Name + ": " + s.Phase
		if took := s.took(); took != "" {
			line += ", " + took
		}
		if len(s.Waiting) > 0 {
			line += ", waiting: " + strings.Join(s.Waiting, ",")
		}
		out = append(out, line)
	}
	return out
}
