package faultmatrix

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/test/env"
)

// SlowAPIServer is the delay a slow API server adds to each direction
// between it and quorum-manager: a round trip of 600 ms, well under the
// workload clusters' 2 s client timeout, so that every call is slow and none
// fails for it alone.
const SlowAPIServer = 300 * time.Millisecond

// ClockJump is how far quorum-manager's clock steps forward, and back at the
// heal: more than the failover Lease's renewal interval, so that the holder
// renews it on the jumped clock, and less than the Lease's duration and every
// timeout of a request, so that neither a takeover nor a timeout is due.
const ClockJump = 90 * time.Second

// APISlow makes one cluster's API server answer quorum-manager slowly,
// through the latency proxy in front of it: the zone is built with
// env.Options.Latency.
func APISlow(side Side) *Fault {
	proxy := func(t testing.TB, e *env.Env, cluster string) *env.LatencyProxy {
		p := e.Latency[cluster]
		require.NotNil(t, p, "no latency proxy in front of %s: the zone needs env.Options.Latency", cluster)
		return p
	}
	return &Fault{
		Name: string(side) + " API server slow", Side: side,
		Inject: func(t testing.TB, e *env.Env, _ *env.Processes, cluster string) {
			proxy(t, e, cluster).SetDelay(SlowAPIServer)
		},
		Heal: func(top testing.TB, e *env.Env, _ *env.Processes, cluster string) { proxy(top, e, cluster).SetDelay(0) },
	}
}

// ClockJumped steps quorum-manager's clock forward by ClockJump, and back at
// the heal: quorum-manager runs on an env.SteppedClock
// (setup.QuorumOptions.Clock).
func ClockJumped() *Fault {
	return &Fault{
		Name: "quorum-manager clock jumped", Side: Quorum,
		Inject: func(t testing.TB, _ *env.Env, p *env.Processes, _ string) { p.QuorumClock(t).Step(ClockJump) },
		Heal:   func(top testing.TB, _ *env.Env, p *env.Processes, _ string) { p.QuorumClock(top).Step(-ClockJump) },
	}
}
