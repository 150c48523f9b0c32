package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// The split a failover's status records is printed per phase, with totals.
func TestPhaseSplit(t *testing.T) {
	var out bytes.Buffer
	phaseSplit(&out, []srv1alpha1.PhaseTiming{
		{Phase: "StoppingOnSource", WorkloadMilliseconds: 2000, ControlPlaneMilliseconds: 100},
		{Phase: "WaitingForDRBD", WorkloadMilliseconds: 500, HeldMilliseconds: 30000, ControlPlaneMilliseconds: 200},
	})
	require.Regexp(t, `PHASE\s+WORKLOAD CLUSTERS\s+HELD\s+CONTROL PLANE`, out.String())
	require.Regexp(t, `StoppingOnSource\s+2s\s+0s\s+100ms`, out.String())
	require.Regexp(t, `WaitingForDRBD\s+500ms\s+30s\s+200ms`, out.String())
	require.Regexp(t, `total\s+2.5s\s+30s\s+300ms`, out.String())

	out.Reset()
	phaseSplit(&out, nil)
	require.Empty(t, out.String(), "nothing for a request that recorded no split")
}
