package faultmatrix

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/test/env"
)

// LinkCut cuts the DRBD replication network between the zone's sites: every
// resource of the DRBD fabric, and each one created while it lasts, loses its
// peer; the heal restores them all, and they resync.
func LinkCut() *Fault {
	return &Fault{
		Name: "DRBD link cut", Side: Link,
		Inject: func(t testing.TB, e *env.Env, _ *env.Processes, _ string) { require.NoError(t, e.DRBD(t).CutLinks()) },
		Heal: func(top testing.TB, e *env.Env, _ *env.Processes, _ string) {
			require.NoError(top, e.DRBD(top).RestoreLinks())
		},
	}
}
