package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

var bootT0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func bootAt(d time.Duration) *metav1.Time { return &metav1.Time{Time: bootT0.Add(d)} }

// stoppedRequest is a failover whose boot plan stopped at its web stage: db
// took 4s, web timed out after 30s waiting for one VM, batch was skipped.
func stoppedRequest() *srv1alpha1.FailoverRequestStatus {
	return &srv1alpha1.FailoverRequestStatus{
		Boot: &srv1alpha1.BootStatus{Stopped: true, Stages: []srv1alpha1.BootStageStatus{
			{Name: "db", Phase: srv1alpha1.StageSucceeded, StartTime: bootAt(0), CompletionTime: bootAt(4 * time.Second)},
			{Name: "web", Phase: srv1alpha1.StageTimedOut, Waiting: []string{"apps/web-2"}, StartTime: bootAt(4 * time.Second),
				CompletionTime: bootAt(34 * time.Second), Message: "timed out after 30s waiting for apps/web-2 to pass the TCP gate on port 8080"},
			{Name: "batch", Phase: srv1alpha1.StageSkipped, Waiting: []string{"apps/batch"}, CompletionTime: bootAt(34 * time.Second),
				Message: "not started: stage web did not succeed"},
		}},
		PhaseTimings: []srv1alpha1.PhaseTiming{{Phase: "StartingOnTarget", WorkloadMilliseconds: 34500, Stages: []srv1alpha1.StageTiming{
			{Stage: "db", Milliseconds: 4000, Phase: srv1alpha1.StageSucceeded},
			{Stage: "web", Milliseconds: 30000, Phase: srv1alpha1.StageTimedOut},
			{Stage: "batch", Phase: srv1alpha1.StageSkipped},
		}}},
	}
}

// The stages' times are the request's split of StartingOnTarget once it
// ended; while the request waits they run from each stage's start, up to now
// for the stage under way.
func TestBootStageStates(t *testing.T) {
	require.Equal(t, []BootStageState{
		{Name: "db", Phase: "Succeeded", Milliseconds: 4000},
		{Name: "web", Phase: "TimedOut", Milliseconds: 30000, Waiting: []string{"apps/web-2"},
			Message: "timed out after 30s waiting for apps/web-2 to pass the TCP gate on port 8080"},
		{Name: "batch", Phase: "Skipped", Waiting: []string{"apps/batch"}, Message: "not started: stage web did not succeed"},
	}, bootStageStates(stoppedRequest(), bootT0.Add(time.Hour)))

	underWay := stoppedRequest()
	underWay.PhaseTimings = nil
	underWay.Boot.Stopped = false
	web := &underWay.Boot.Stages[1]
	web.Phase, web.CompletionTime, web.Message = srv1alpha1.StageStarting, nil, ""
	underWay.Boot.Stages[2] = srv1alpha1.BootStageStatus{Name: "batch", Phase: srv1alpha1.StagePending}
	got := bootStageStates(underWay, bootT0.Add(16*time.Second))
	require.Equal(t, int64(4000), got[0].Milliseconds)
	require.Equal(t, int64(12000), got[1].Milliseconds, "the stage under way, so far")
	require.Equal(t, int64(0), got[2].Milliseconds)

	require.Nil(t, bootStageStates(&srv1alpha1.FailoverRequestStatus{}, bootT0), "no boot plan, no stages")
}

// failover --wait ends with one row per stage: phase, time, VMs waiting and
// why; a stage that never started shows no time.
func TestBootTable(t *testing.T) {
	var out bytes.Buffer
	bootTable(&out, bootStageStates(stoppedRequest(), bootT0), true)
	require.Contains(t, out.String(), "Boot stages on the target:")
	require.Regexp(t, `STAGE\s+PHASE\s+TOOK\s+WAITING\s+MESSAGE`, out.String())
	require.Regexp(t, `db\s+Succeeded\s+4s\s+-\s+-\n`, out.String())
	require.Regexp(t, `web\s+TimedOut\s+30s\s+apps/web-2\s+timed out after 30s waiting for apps/web-2`, out.String())
	require.Regexp(t, `batch\s+Skipped\s+-\s+apps/batch\s+not started: stage web did not succeed`, out.String())
	require.Contains(t, out.String(), "the boot plan stopped")

	out.Reset()
	bootTable(&out, nil, false)
	require.Empty(t, out.String(), "nothing for a request without a boot plan")
}

// status prints, under an unfinished failover's message, one line per boot
// stage with its phase, time and the VMs it waits for.
func TestStatusShowsBootStages(t *testing.T) {
	st := stoppedRequest()
	st.PhaseTimings = nil
	web := &st.Boot.Stages[1]
	web.Phase, web.CompletionTime, web.Message = srv1alpha1.StageStarting, nil, ""
	st.Boot.Stages[2] = srv1alpha1.BootStageStatus{Name: "batch", Phase: srv1alpha1.StagePending}
	r := &StatusReport{Namespaces: []NamespaceStatus{{Namespace: "dr", Groups: []GroupStatus{{
		Name: "g", ActiveCluster: "primary", Requests: []RequestState{{Kind: "FailoverRequest", Name: "move", Phase: "StartingOnTarget",
			Message:    `waiting for group g to run on dr (currentState "starting"); boot stage web (2/3) Starting`,
			BootStages: bootStageStates(st, bootT0.Add(10*time.Second))}},
	}}}}}
	var out bytes.Buffer
	require.NoError(t, r.table(&out, printers.PrintOptions{}, false))
	require.Contains(t, out.String(), "  FailoverRequest/move: waiting for group g to run on dr")
	require.Contains(t, out.String(), "\n    FailoverRequest/move boot stage db: Succeeded, 4s\n"+
		"    FailoverRequest/move boot stage web: Starting, 6s, waiting: apps/web-2\n"+
		"    FailoverRequest/move boot stage batch: Pending\n")
}
