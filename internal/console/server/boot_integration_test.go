package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/test/bootfixture"
)

type bootPlanJSON struct {
	OnStageTimeout string
	Stages         []struct {
		Name            string
		VirtualMachines []string
		Selector        string
		Gate            struct {
			Type string
			Port int32
			Path string
		}
		TimeoutSeconds      int32
		PreStart, PostStart *struct{ Image string }
		Implicit            bool
	}
}

type bootRunJSON struct {
	Stopped    bool
	StoppedAt  string
	NotStarted []string
	Advice     string
	Stages     []struct {
		Name            string
		Phase           string
		VirtualMachines []string
		Waiting         []string
		DurationSeconds *float64
		Message         string
	}
}

// TestBootPlanModel reads, as a viewer, a group with a boot plan and its
// finished failover and test failover: the group carries the plan's stages
// in order with their VMs, gate, timeout and step images, the implicit stage
// last, and no step's env value; each request carries its stages with phase,
// duration (the failover's from its phaseTimings split) and waiting VMs, and
// the stopped test its stopping stage, the VMs left stopped and what to do.
func TestBootPlanModel(t *testing.T) {
	q := startQuorum(t, server.Options{LoginAttempts: 1000})
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, bootfixture.Write(context.Background(), q.admin, drNamespace, groupName, "dr-cluster", t0))
	b := q.browser()
	require.Equal(t, http.StatusOK, b.login(q.tokens["viewer"]).code)

	r := b.get("/api/namespaces/" + drNamespace + "/groups/" + groupName)
	require.Equal(t, http.StatusOK, r.code, string(r.body))
	var d struct {
		Boot       *bootPlanJSON
		Operations []struct {
			Kind, Name string
			Boot       *bootRunJSON
		}
	}
	r.json(t, &d)
	assert.NotContains(t, string(r.body), bootfixture.StepEnvValue, "a step's env value is not the console's to show")

	require.NotNil(t, d.Boot, "the group's plan")
	p := d.Boot
	assert.Equal(t, "Stop", p.OnStageTimeout)
	require.Len(t, p.Stages, 3)
	db, web, rest := p.Stages[0], p.Stages[1], p.Stages[2]
	assert.Equal(t, "database", db.Name)
	assert.Equal(t, []string{"apps/vm-00"}, db.VirtualMachines)
	assert.Equal(t, "TCP", db.Gate.Type)
	assert.EqualValues(t, 5432, db.Gate.Port)
	assert.EqualValues(t, 600, db.TimeoutSeconds)
	require.NotNil(t, db.PreStart)
	assert.Equal(t, bootfixture.PreImage, db.PreStart.Image)
	assert.Nil(t, db.PostStart)
	assert.Equal(t, "web", web.Name)
	assert.Equal(t, "tier=web", web.Selector)
	assert.Equal(t, "HTTP", web.Gate.Type)
	assert.EqualValues(t, 8080, web.Gate.Port)
	assert.Equal(t, "/healthz", web.Gate.Path)
	require.NotNil(t, web.PostStart)
	assert.Equal(t, bootfixture.PostImage, web.PostStart.Image)
	assert.Equal(t, "remaining", rest.Name)
	assert.True(t, rest.Implicit)
	assert.Equal(t, "Ready", rest.Gate.Type)
	assert.EqualValues(t, 300, rest.TimeoutSeconds)

	runs := map[string]*bootRunJSON{}
	for _, o := range d.Operations {
		runs[o.Kind+"/"+o.Name] = o.Boot
	}
	fo := runs["FailoverRequest/"+bootfixture.Failover]
	require.NotNil(t, fo, "the failover's boot")
	assert.False(t, fo.Stopped)
	assert.Empty(t, fo.Advice)
	require.Len(t, fo.Stages, 3)
	for i, want := range []struct {
		name   string
		millis int
	}{{"database", bootfixture.DatabaseMillis}, {"web", bootfixture.WebMillis}, {"remaining", bootfixture.RemainingMillis}} {
		s := fo.Stages[i]
		assert.Equal(t, want.name, s.Name)
		assert.Equal(t, "Succeeded", s.Phase)
		require.NotNil(t, s.DurationSeconds, want.name)
		assert.InDelta(t, float64(want.millis)/1000, *s.DurationSeconds, 0.001, "%s: the phaseTimings split", want.name)
	}

	tf := runs["TestFailover/"+bootfixture.Test]
	require.NotNil(t, tf, "the test failover's boot")
	assert.True(t, tf.Stopped)
	assert.Equal(t, "database (TimedOut)", tf.StoppedAt)
	assert.Equal(t, []string{"apps/vm-01"}, tf.NotStarted)
	assert.Contains(t, tf.Advice, "stage database")
	assert.Contains(t, tf.Advice, "run the test failover again")
	require.Len(t, tf.Stages, 3)
	assert.Equal(t, "TimedOut", tf.Stages[0].Phase)
	assert.Equal(t, []string{"apps/vm-00"}, tf.Stages[0].Waiting)
	assert.Equal(t, bootfixture.TimedOutMessage, tf.Stages[0].Message)
	require.NotNil(t, tf.Stages[0].DurationSeconds)
	assert.InDelta(t, 600, *tf.Stages[0].DurationSeconds, 0.001, "from the stage's start to its end")
	for _, s := range tf.Stages[1:] {
		assert.Equal(t, "Skipped", s.Phase, s.Name)
		assert.Nil(t, s.DurationSeconds, "%s never started", s.Name)
	}
}
