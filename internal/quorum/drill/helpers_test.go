package drill_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/drill"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

const ns = "dr-drills"

// quorum is a quorum API server and a drill reconciler on a clock the test
// moves, called directly so that each step is one reconcile.
type quorum struct {
	t      *testing.T
	ctx    context.Context
	c      client.Client
	clock  *clocktesting.FakeClock
	events *record.FakeRecorder
	r      *drill.Reconciler
	// watch is a client of the same API server that interceptor can wrap.
	watch client.WithWatch
}

func newQuorum(t *testing.T, start time.Time) *quorum {
	z := harness.Start(t, harness.Options{Scheme: scheme.New(), CRDDirectoryPaths: harness.DefaultCRDPaths()}, harness.Quorum)
	c := z.Clusters[harness.Quorum].Client
	q := &quorum{t: t, ctx: context.Background(), c: c, clock: clocktesting.NewFakeClock(start), events: record.NewFakeRecorder(100)}
	q.r = q.reconciler(c)
	var err error
	q.watch, err = client.NewWithWatch(z.Clusters[harness.Quorum].Config, client.Options{Scheme: c.Scheme()})
	require.NoError(t, err)
	require.NoError(t, c.Create(q.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	return q
}

// reconciler is a drill controller on the test's clock, as a restarted
// quorum-manager would build it.
func (q *quorum) reconciler(c client.Client) *drill.Reconciler {
	return &drill.Reconciler{Client: c, Reader: c, Recorder: q.events, Clock: q.clock}
}

func (q *quorum) group(name string, d *srv1alpha1.DrillSchedule) *srv1alpha1.ProtectionGroup {
	q.t.Helper()
	g := &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: srv1alpha1.ProtectionGroupSpec{
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Name: "vm-00", Namespace: "apps"}},
			ActiveCluster:   "primary", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "zone"}, Drill: d,
		},
	}
	require.NoError(q.t, q.c.Create(q.ctx, g))
	return g
}

// reconcile runs one reconcile of the group at the clock's time.
func (q *quorum) reconcile(group string) ctrl.Result {
	q.t.Helper()
	res, err := q.r.Reconcile(q.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: group}})
	require.NoError(q.t, err)
	return res
}

func (q *quorum) status(group string) *srv1alpha1.DrillStatus {
	q.t.Helper()
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(q.t, q.c.Get(q.ctx, client.ObjectKey{Namespace: ns, Name: group}, g))
	require.NotNil(q.t, g.Status.Drill, "status.drill of %s", group)
	return g.Status.Drill
}

func (q *quorum) testFailovers() map[string]srv1alpha1.TestFailover {
	q.t.Helper()
	list := &srv1alpha1.TestFailoverList{}
	require.NoError(q.t, q.c.List(q.ctx, list, client.InNamespace(ns)))
	out := map[string]srv1alpha1.TestFailover{}
	for _, tf := range list.Items {
		out[tf.Name] = tf
	}
	return out
}

// finish plays the test-failover controller: the drill ends in phase with
// the Ready verdict message.
func (q *quorum) finish(name string, phase srv1alpha1.TestFailoverPhase, message string) time.Time {
	q.t.Helper()
	tf := &srv1alpha1.TestFailover{}
	require.NoError(q.t, q.c.Get(q.ctx, client.ObjectKey{Namespace: ns, Name: name}, tf))
	end := q.clock.Now().Add(7 * time.Minute).Truncate(time.Second)
	tf.Status.Phase = phase
	tf.Status.CompletionTime = &metav1.Time{Time: end}
	status, reason := metav1.ConditionTrue, "Passed"
	if phase == srv1alpha1.TestFailoverFailed {
		status, reason = metav1.ConditionFalse, "ChecksFailed"
	}
	meta.SetStatusCondition(&tf.Status.Conditions, metav1.Condition{Type: srv1alpha1.ConditionReady, Status: status, Reason: reason, Message: message})
	require.NoError(q.t, q.c.Status().Update(q.ctx, tf))
	return end
}

// running plays a test failover in progress.
func (q *quorum) running(name string) {
	q.t.Helper()
	tf := &srv1alpha1.TestFailover{}
	require.NoError(q.t, q.c.Get(q.ctx, client.ObjectKey{Namespace: ns, Name: name}, tf))
	tf.Status.Phase = srv1alpha1.TestFailoverBooting
	require.NoError(q.t, q.c.Status().Update(q.ctx, tf))
}

// drainEvents returns the events recorded since the last call.
func (q *quorum) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-q.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}
