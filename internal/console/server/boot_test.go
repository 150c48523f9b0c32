package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestBootOf covers what the boot timeline's model decides beyond copying
// the status: a failover whose plan stopped names the stage, the VMs left
// stopped and the two ways on; a stage under way counts up to now; a start
// of the implicit stage alone (a group without a plan) shows no timeline.
func TestBootOf(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) *metav1.Time { v := metav1.NewTime(t0.Add(time.Duration(s) * time.Second)); return &v }

	stopped := &srv1alpha1.BootStatus{Stopped: true, Stages: []srv1alpha1.BootStageStatus{
		{Name: "database", Phase: srv1alpha1.StageFailed, StartTime: at(0), CompletionTime: at(30), VirtualMachines: []string{"apps/db"}},
		{Name: "web", Phase: srv1alpha1.StageSkipped, VirtualMachines: []string{"apps/web-0", "apps/web-1"}},
		{Name: srv1alpha1.ImplicitStageName, Phase: srv1alpha1.StageSkipped, VirtualMachines: []string{"apps/batch"}},
	}}
	v := bootOf(stopped, nil, "FailoverRequest", t0.Add(time.Hour))
	require.NotNil(t, v)
	assert.Equal(t, "database (Failed)", v.StoppedAt)
	assert.Equal(t, []string{"apps/web-0", "apps/web-1", "apps/batch"}, v.NotStarted)
	assert.Contains(t, v.Advice, "Fix what stage database waited for")
	assert.Contains(t, v.Advice, "virtctl start")
	assert.Contains(t, v.Advice, "onStageTimeout: Continue")
	require.NotNil(t, v.Stages[0].DurationSeconds)
	assert.InDelta(t, 30, *v.Stages[0].DurationSeconds, 0.001)

	running := &srv1alpha1.BootStatus{Stages: []srv1alpha1.BootStageStatus{
		{Name: "database", Phase: srv1alpha1.StageStarting, StartTime: at(0), Waiting: []string{"apps/db"}},
		{Name: srv1alpha1.ImplicitStageName, Phase: srv1alpha1.StagePending},
	}}
	v = bootOf(running, stageSplit(nil), "FailoverRequest", t0.Add(75*time.Second))
	require.NotNil(t, v)
	assert.False(t, v.Stopped)
	assert.Empty(t, v.Advice)
	require.NotNil(t, v.Stages[0].DurationSeconds)
	assert.InDelta(t, 75, *v.Stages[0].DurationSeconds, 0.001, "a stage under way counts to now")
	assert.Nil(t, v.Stages[1].DurationSeconds, "a pending stage has no duration")

	implicit := &srv1alpha1.BootStatus{Stages: []srv1alpha1.BootStageStatus{
		{Name: srv1alpha1.ImplicitStageName, Phase: srv1alpha1.StageSucceeded, StartTime: at(0), CompletionTime: at(9)}}}
	assert.Nil(t, bootOf(implicit, nil, "TestFailover", t0), "no plan, no timeline")
	assert.Nil(t, bootOf(nil, nil, "TestFailover", t0))
}
