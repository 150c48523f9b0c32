package drill

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// drills are the group's drills: TestFailovers labelled with its name and
// owned by it, newest slot first.
func (r *Reconciler) drills(ctx context.Context, g *srv1alpha1.ProtectionGroup) ([]srv1alpha1.TestFailover, error) {
	list := &srv1alpha1.TestFailoverList{}
	if err := r.Client.List(ctx, list, client.InNamespace(g.Namespace), client.MatchingLabels{srv1alpha1.DrillLabel: g.Name}); err != nil {
		return nil, fmt.Errorf("listing the drills of group %s: %w", g.Name, err)
	}
	var out []srv1alpha1.TestFailover
	for _, tf := range list.Items {
		if metav1.IsControlledBy(&tf, g) {
			out = append(out, tf)
		}
	}
	slices.SortFunc(out, func(a, b srv1alpha1.TestFailover) int { return slotOf(&b).Compare(slotOf(&a)) })
	return out, nil
}

// slotOf is the slot a drill ran for; its creation time if unreadable.
func slotOf(tf *srv1alpha1.TestFailover) time.Time {
	if t, err := time.Parse(time.RFC3339, tf.Annotations[srv1alpha1.DrillScheduledTimeAnnotation]); err == nil {
		return t
	}
	return tf.CreationTimestamp.Time
}

func finished(tf *srv1alpha1.TestFailover) bool {
	return tf.Status.Phase == srv1alpha1.TestFailoverSucceeded || tf.Status.Phase == srv1alpha1.TestFailoverFailed
}

// observe records the newest finished drill's outcome, once, and which drill
// is in progress. A drill recorded as active that is gone was deleted before
// it ended.
func (r *Reconciler) observe(ctx context.Context, s *scope, drills []srv1alpha1.TestFailover) error {
	st := s.status
	active := ""
	for i := range drills {
		if !finished(&drills[i]) {
			active = drills[i].Name
			break
		}
	}
	gone, err := r.gone(ctx, s.group, st.Active, drills)
	if err != nil {
		return err
	}
	if !gone && active == "" && st.Active != "" && !slices.ContainsFunc(drills, func(tf srv1alpha1.TestFailover) bool { return tf.Name == st.Active }) {
		active = st.Active // created a moment ago, not yet in the cache
	}
	if gone {
		st.LastDrill, st.LastResult = st.Active, srv1alpha1.DrillFailed
		st.Message = fmt.Sprintf("drill %s was deleted before it ended", st.Active)
		s.warning(ReasonDrillFailed, "%s", st.Message)
	}
	st.Active = active
	i := slices.IndexFunc(drills, func(tf srv1alpha1.TestFailover) bool { return finished(&tf) })
	if i < 0 || drills[i].Name == st.LastDrill {
		return nil
	}
	tf := &drills[i]
	st.LastDrill = tf.Name
	verdict := meta.FindStatusCondition(tf.Status.Conditions, srv1alpha1.ConditionReady)
	if tf.Status.Phase == srv1alpha1.TestFailoverSucceeded {
		st.LastResult = srv1alpha1.DrillPassed
		end := s.now
		if tf.Status.CompletionTime != nil {
			end = tf.Status.CompletionTime.Time
		}
		if st.LastSuccessfulTime == nil || end.After(st.LastSuccessfulTime.Time) {
			st.LastSuccessfulTime = metaTime(end)
		}
		st.Message = fmt.Sprintf("drill %s passed", tf.Name)
		s.normal(ReasonDrillPassed, "drill %s passed every check on %s", tf.Name, tf.Spec.TargetCluster)
		return nil
	}
	st.LastResult = srv1alpha1.DrillFailed
	st.Message = fmt.Sprintf("drill %s failed", tf.Name)
	if verdict != nil && verdict.Message != "" {
		st.Message += ": " + verdict.Message
	}
	st.Message = truncate(st.Message, 1024)
	s.warning(ReasonDrillFailed, "%s", st.Message)
	return nil
}

// gone reports whether the drill recorded as active no longer exists. The
// cache may not hold a drill created a moment ago, so its absence there is
// confirmed past the cache.
func (r *Reconciler) gone(ctx context.Context, g *srv1alpha1.ProtectionGroup, name string, drills []srv1alpha1.TestFailover) (bool, error) {
	if name == "" || slices.ContainsFunc(drills, func(tf srv1alpha1.TestFailover) bool { return tf.Name == name }) {
		return false, nil
	}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: name}, &srv1alpha1.TestFailover{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading drill %s: %w", name, err)
	}
	return false, nil
}

// retain deletes the finished drills beyond spec.drill.keep, oldest first
// out. Only drills this controller created are in the list.
func (r *Reconciler) retain(ctx context.Context, s *scope, drills []srv1alpha1.TestFailover) error {
	keep := int(cmp.Or(s.group.Spec.Drill.Keep, 3))
	n := 0
	for i := range drills {
		tf := &drills[i]
		if !finished(tf) {
			continue
		}
		n++
		if n <= keep {
			continue
		}
		err := r.Client.Delete(ctx, tf, client.Preconditions{UID: &tf.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting drill %s (keep=%d): %w", tf.Name, keep, err)
		}
	}
	return nil
}

// start starts the drill of slot, or finds the one a previous attempt
// created, or skips the slot saying why.
func (r *Reconciler) start(ctx context.Context, s *scope, slot time.Time) error {
	st := s.status
	name := Name(s.group.Name, slot)
	tf := &srv1alpha1.TestFailover{}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: s.group.Namespace, Name: name}, tf)
	switch {
	case err == nil && metav1.IsControlledBy(tf, s.group):
		r.adopt(s, tf, slot)
		return nil
	case err == nil:
		s.skip(slot, "TestFailover %s exists and was not created by this group's drill; delete or rename it", name)
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading drill %s: %w", name, err)
	}
	if why, err := r.blocker(ctx, s.group); err != nil || why != "" {
		if why != "" {
			s.skip(slot, "%s", why)
		}
		return err
	}
	tf = newDrill(s.group, name, slot)
	if err := controllerutil.SetControllerReference(s.group, tf, r.Client.Scheme()); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, tf); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			st.Message = truncate(fmt.Sprintf("could not start drill %s: %v", name, err), 1024)
			return fmt.Errorf("creating drill %s: %w", name, err)
		}
		// A concurrent reconcile created it: read it and carry on.
		if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(tf), tf); err != nil {
			return fmt.Errorf("reading drill %s: %w", name, err)
		}
	}
	r.adopt(s, tf, slot)
	return nil
}

// adopt records tf as the drill of slot; the event once, with the status
// that first shows it.
func (r *Reconciler) adopt(s *scope, tf *srv1alpha1.TestFailover, slot time.Time) {
	st := s.status
	if st.LastScheduleTime == nil || !st.LastScheduleTime.Time.Equal(slot) {
		st.LastScheduleTime = metaTime(slot)
		st.Message = ""
		s.normal(ReasonDrillStarted, "started drill %s on %s (scheduled %s)", tf.Name, tf.Spec.TargetCluster, slot.UTC().Format(time.RFC3339))
	}
	if !finished(tf) {
		st.Active = tf.Name
	}
}

// skip gives up the slot: a drill now would overlap another test or a
// failover, and a late one would run at a time nobody chose.
func (s *scope) skip(slot time.Time, format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	s.status.Message = truncate(fmt.Sprintf("skipped the drill due at %s: %s", slot.UTC().Format(time.RFC3339), why), 1024)
	s.warning(ReasonDrillSkipped, "%s", s.status.Message)
}

func newDrill(g *srv1alpha1.ProtectionGroup, name string, slot time.Time) *srv1alpha1.TestFailover {
	t := g.Spec.Drill.Template
	return &srv1alpha1.TestFailover{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   g.Namespace,
			Name:        name,
			Labels:      map[string]string{srv1alpha1.DrillLabel: g.Name},
			Annotations: map[string]string{srv1alpha1.DrillScheduledTimeAnnotation: slot.UTC().Format(time.RFC3339)},
		},
		Spec: srv1alpha1.TestFailoverSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: g.Name},
			TargetCluster:      t.TargetCluster,
			IsolatedNamespace:  IsolatedNamespace(g.Name, slot),
			TimeoutSeconds:     cmp.Or(t.TimeoutSeconds, 3600),
			Checks:             t.Checks,
		},
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
