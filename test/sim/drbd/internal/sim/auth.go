package sim

import (
	"crypto/sha256"
	"encoding/hex"
)

// Peer authentication (drbd kernel drbd_receiver.c): when a connection is
// established, conn_connect runs drbd_do_auth if cram-hmac-alg is set. Each
// side sends a random challenge and checks the peer's HMAC of it, keyed
// with the shared secret; a wrong answer ("Authentication of peer failed")
// aborts the connection with change_cstate(C_DISCONNECTING, CS_HARD): the
// connection is StandAlone and DRBD does not retry it until "drbdadm
// connect" (or an adjust that connects it). A side without cram-hmac-alg
// sends no challenge: its peer, expecting AuthChallenge, aborts the same
// way, while it keeps trying. Authentication happens only then: a changed
// secret (drbd_nl.c adm_net_options swaps the HMAC transform) leaves an
// established connection alone and counts from the next connect.

// authKey identifies the file's peer authentication without holding the
// secret: two nodes authenticate each other exactly when their keys match.
func (rc *ResConfig) authKey() string {
	if rc.CramHMACAlg == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(rc.CramHMACAlg + "\x00" + rc.SharedSecret))
	return hex.EncodeToString(sum[:])
}

// linked reports whether a and b had an established connection at the last
// settle.
func (r *Res) linked(a, b *Node) bool {
	p := r.Pairs[pairKey(a.Host, b.Host)]
	return p != nil && p.Link
}

// refuseAuth makes a connection attempt between a and b that fails
// authentication leave every side that checked the peer StandAlone.
func (r *Res) refuseAuth(a, b *Node) {
	if !r.reachable(a, b) || a.Auth == b.Auth || r.linked(a, b) {
		return
	}
	for _, x := range []*Node{a, b} {
		if x.Auth == "" {
			continue // it sent no challenge and keeps connecting
		}
		y := b
		if x == b {
			y = a
		}
		if x.StandAlone == nil {
			x.StandAlone = map[string]bool{}
		}
		x.StandAlone[y.Host] = true
	}
}
