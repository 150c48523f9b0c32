package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestCheckTableShowsTheBootStages: test-failover --wait prints the stages the
// test VMs started in after the checks, with the stage that stopped the plan,
// and nothing more for a group without a plan (the implicit stage alone).
func TestCheckTableShowsTheBootStages(t *testing.T) {
	tf := &srv1alpha1.TestFailover{}
	tf.Name, tf.Status.Phase = "shop-test-x", srv1alpha1.TestFailoverFailed
	tf.Status.Results = []srv1alpha1.CheckResult{{VM: "web-1", Check: "VMReady", Message: "not started: boot stage db did not succeed"}}
	tf.Status.Boot = &srv1alpha1.BootStatus{Stopped: true, Stages: []srv1alpha1.BootStageStatus{
		{Name: "db", Phase: srv1alpha1.StageTimedOut, StartTime: bootAt(0), CompletionTime: bootAt(8 * time.Second),
			Waiting: []string{"sr-test-x/db"}, Message: "timed out after 8s waiting for the TCP gate"},
		{Name: "web", Phase: srv1alpha1.StageSkipped, Waiting: []string{"sr-test-x/web-1"}, CompletionTime: bootAt(8 * time.Second)},
	}}
	var out bytes.Buffer
	require.NoError(t, checkTable(&out, tf))
	require.Contains(t, out.String(), "Boot stages on the target:")
	require.Regexp(t, `db\s+TimedOut\s+8s\s+sr-test-x/db\s+timed out after 8s waiting for the TCP gate`, out.String())
	require.Regexp(t, `web\s+Skipped`, out.String())
	require.Contains(t, out.String(), "the boot plan stopped")

	tf.Status.Boot = &srv1alpha1.BootStatus{Stages: []srv1alpha1.BootStageStatus{{Name: srv1alpha1.ImplicitStageName, Phase: srv1alpha1.StageSucceeded}}}
	out.Reset()
	require.NoError(t, checkTable(&out, tf))
	require.NotContains(t, out.String(), "Boot stages")
}
