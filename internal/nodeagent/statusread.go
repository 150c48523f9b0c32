package nodeagent

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// answerStatusRequest reads DRBD's current figures when spec.statusRequest
// asks for a reading not yet answered. events2 carries out-of-sync figures
// only with a state change or a resync's progress (drbd_state.c and
// drbd_actlog.c in LINBIT/drbd), so a replica writing while its peer is away
// keeps showing the figure of the disconnect; `drbdsetup status` reads the
// current one. The reading goes into the tracked state, which the status
// setters then write, with the token (setStatusAnswered). The memo keeps
// the answer until it is written: the status writer may hold a write back,
// and a request is read once. A failed reading is retried by the next
// reconcile.
func (r *Reconciler) answerStatusRequest(ctx context.Context, s *scope) bool {
	want := s.obj.Spec.StatusRequest
	if want == "" || want == s.before.StatusAnswered || want == s.memo.answered || !s.up {
		return true
	}
	read, err := r.Adm.Status(ctx, s.obj.Name)
	if err != nil || len(read) != 1 || !r.Watcher.Refresh(read[0]) {
		s.log.Info("reading DRBD's current figures for spec.statusRequest", "request", want, "error", err, "resources", len(read))
		return false
	}
	s.memo.answered, s.memo.readAt = want, s.now
	return true
}

// setStatusAnswered echoes the request a reading answered, and its time.
func setStatusAnswered(_ *Reconciler, s *scope) {
	if s.memo.answered == "" || s.memo.answered != s.obj.Spec.StatusRequest {
		return
	}
	s.obj.Status.StatusAnswered = s.memo.answered
	s.obj.Status.StatusReadTime = &metav1.Time{Time: s.memo.readAt}
}
