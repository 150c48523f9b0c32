package nodeagent

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// discardData carries out spec.discardData once: the replica's data diverged
// from its peer's (it stayed Primary while fenced off and the peer was
// promoted with force), so it is thrown away with fresh metadata and DRBD
// resyncs it in full from the peer once they connect. It runs only on a
// Secondary that no peer is connected to: a connected replica would start
// replicating its own data again, and a Primary may still be written to.
// status.dataDiscarded remembers the value carried out; a crash before that
// is written repeats the discard, which loses nothing more.
func (r *Reconciler) discardData(ctx context.Context, s *scope) (ctrl.Result, error) {
	token := s.obj.Spec.DiscardData
	if token == "" || token == s.obj.Status.DataDiscarded {
		return ctrl.Result{}, nil
	}
	if wantedRole(s.obj) != srv1alpha1.RoleSecondary || s.tracked.Role != string(srv1alpha1.RoleSecondary) || connectedToAPeer(s) {
		return ctrl.Result{}, nil // DRBD's next event wakes the resource
	}
	fp := "discard " + token
	if wait, blocked := s.memo.adm.blocked(r.Clock.Now(), fp); blocked {
		return ctrl.Result{}, r.admError(s, wait)
	}
	for _, step := range []struct {
		cmd string
		run func(context.Context, string) error
	}{
		{"down", r.Adm.Down},
		{"create-md", func(ctx context.Context, name string) error { return r.Adm.CreateMD(ctx, name, 0) }},
		{"up", r.Adm.Up},
	} {
		if err := step.run(ctx, s.obj.Name); err != nil {
			msg := "discarding the diverged data: drbdadm " + step.cmd + " failed: " + drbdMessage(err)
			return ctrl.Result{}, r.admError(s, s.memo.adm.fail(r.Clock.Now(), fp, msg))
		}
	}
	s.memo.adm.reset()
	s.memo.upIssued, s.up = r.Clock.Now(), true
	s.obj.Status.DataDiscarded = token
	r.event(s.obj, "Warning", "DataDiscarded", "the replica's diverged data was discarded (fresh metadata); DRBD resyncs it in full from its peer")
	return ctrl.Result{}, nil
}

// connectedToAPeer reports whether DRBD has a live connection to any peer.
func connectedToAPeer(s *scope) bool {
	for _, c := range s.tracked.Connections {
		if c.ConnectionState == "Connected" {
			return true
		}
	}
	return false
}
