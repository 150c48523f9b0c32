package nodeagent

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/siterecovery/siterecovery/internal/drbd"
)

// Backoff bounds for retried drbdadm commands.
const (
	retryBase = time.Second
	retryMax  = 2 * time.Minute
)

// retryGate is an exponential backoff for a failing command that opens early when
// the state it failed in changes (its fingerprint), so that, e.g., a promotion
// refused because the peer is Primary is retried as soon as the peer demotes.
type retryGate struct {
	failures    int
	next        time.Time
	fingerprint string
	message     string
}

// blocked reports whether a retry must wait, and for how long.
func (g *retryGate) blocked(now time.Time, fingerprint string) (time.Duration, bool) {
	if g.failures == 0 || fingerprint != g.fingerprint || !now.Before(g.next) {
		return 0, false
	}
	return g.next.Sub(now), true
}

// fail records a failure and returns the wait before the next attempt.
func (g *retryGate) fail(now time.Time, fingerprint, message string) time.Duration {
	d := retryMax
	if g.failures < 16 {
		d = min(retryBase<<g.failures, retryMax)
	}
	g.failures++
	g.next, g.fingerprint, g.message = now.Add(d), fingerprint, message
	return d
}

func (g *retryGate) reset() { *g = retryGate{} }

// promotionFingerprint summarises what decides whether DRBD allows a promotion:
// role, quorum, local disks, and every peer's connection, role and disk.
func promotionFingerprint(up bool, st drbd.ResourceStatus) string {
	if !up {
		return "down"
	}
	parts := []string{st.Role, fmt.Sprint(st.LacksQuorum(), st.MayPromote)}
	for v, d := range st.Devices {
		parts = append(parts, fmt.Sprintf("d%d=%s", v, d.DiskState))
	}
	for id, c := range st.Connections {
		parts = append(parts, fmt.Sprintf("c%d=%s/%s", id, c.ConnectionState, c.PeerRole))
		for v, pd := range c.PeerDevices {
			parts = append(parts, fmt.Sprintf("p%d.%d=%s", id, v, pd.PeerDiskState))
		}
	}
	sort.Strings(parts[2:])
	return strings.Join(parts, ",")
}
