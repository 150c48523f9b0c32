package nodeagent

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// reconnect runs `drbdadm connect` for a connection DRBD dropped to
// StandAlone: a split brain no after-sb policy resolved, or unrelated data.
// DRBD never retries such a connection by itself (drbd_receiver.c,
// drbd_sync_handshake: "Split-Brain detected but unresolved, dropping
// connection!"), so without this a replica stays cut off from its peer even
// after the peer discarded its diverged data (the rejoin of a fenced-off
// cluster). Connecting again is safe: the handshake decides anew, and a split
// brain still unresolved drops the connection again, resyncing nothing. The
// attempts back off while the connection stays StandAlone; a peer left out of
// the resource file (spec.fencedPeers) has no connection to retry.
func (r *Reconciler) reconnect(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.up || s.obj.Spec.DiscardData != "" && s.obj.Spec.DiscardData != s.obj.Status.DataDiscarded {
		return ctrl.Result{}, nil // a pending discard brings the resource down and up itself
	}
	var standAlone []string
	for _, c := range s.tracked.Connections {
		if c.ConnectionState == "StandAlone" {
			standAlone = append(standAlone, c.Name)
		}
	}
	if len(standAlone) == 0 {
		s.memo.reconnect.reset()
		return ctrl.Result{}, nil
	}
	const fp = "connect"
	if wait, blocked := s.memo.reconnect.blocked(r.Clock.Now(), fp); blocked {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	msg := "drbdadm connect after StandAlone"
	if err := r.Adm.Connect(ctx, s.obj.Name); err != nil {
		msg = "drbdadm connect failed: " + drbdMessage(err)
	}
	s.log.Info("connection was StandAlone; connecting again", "peers", standAlone, "result", msg)
	return ctrl.Result{RequeueAfter: s.memo.reconnect.fail(r.Clock.Now(), fp, msg)}, nil
}
