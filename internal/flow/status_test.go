package flow

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

func newRequest() *srv1alpha1.FailoverRequest {
	return &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "fr"}}
}

// statusClient is a fake API server holding one FailoverRequest.
func statusClient(t *testing.T) (client.Client, *srv1alpha1.FailoverRequest) {
	t.Helper()
	fr := newRequest()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(fr).
		WithStatusSubresource(&srv1alpha1.FailoverRequest{}).Build()
	read := &srv1alpha1.FailoverRequest{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(fr), read))
	return c, read
}

func stored(t *testing.T, c client.Client) *srv1alpha1.FailoverRequest {
	t.Helper()
	got := &srv1alpha1.FailoverRequest{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(newRequest()), got))
	return got
}

func TestStatusWriterIsOptimisticallyLocked(t *testing.T) {
	ctx := context.Background()
	c, read := statusClient(t)
	rec := record.NewFakeRecorder(10)
	w := NewStatusWriter(c, rec)

	stale := read.DeepCopy()
	read.Status.Message = "first"
	res, err := w.Write(ctx, read, Change{Changed: true, Events: []Event{{Type: "Normal", Reason: "Pending", Message: "first"}}})
	require.NoError(t, err)
	require.True(t, res.Wrote)
	require.Equal(t, "first", stored(t, c).Status.Message)
	require.Equal(t, "Normal Pending first", <-rec.Events)

	stale.Status.Message = "from a stale read"
	_, err = w.Write(ctx, stale, Change{Changed: true, Events: []Event{{Type: "Normal", Reason: "Stale", Message: "x"}}})
	require.True(t, apierrors.IsConflict(err), "a write from a stale read must fail with a conflict, got %v", err)
	require.Equal(t, "first", stored(t, c).Status.Message, "a stale read never overwrites a newer status")
	require.Empty(t, rec.Events, "no event for a status that was not written")

	res, err = w.Write(ctx, read, Change{Changed: false})
	require.NoError(t, err)
	require.False(t, res.Wrote, "an unchanged status is not written")

	require.NoError(t, c.Delete(ctx, newRequest()))
	read.Status.Message = "after delete"
	_, err = w.Write(ctx, read, Change{Changed: true})
	require.NoError(t, err, "an object deleted meanwhile is not an error")
}

func TestStatusWriterThrottlesProgressOnly(t *testing.T) {
	ctx := context.Background()
	c, fr := statusClient(t)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	w := NewStatusWriter(c, nil, WithPacer(NewThrottle(time.Second)), WithClock(clk))

	write := func(msg string, progressOnly bool) Written {
		t.Helper()
		fr.Status.Message = msg
		res, err := w.Write(ctx, fr, Change{Changed: true, Progress: Progress{Only: progressOnly}})
		require.NoError(t, err)
		return res
	}
	require.True(t, write("phase entered", false).Wrote)
	clk.SetTime(clk.Now().Add(300 * time.Millisecond))
	held := write("1 of 3 ready", true)
	require.False(t, held.Wrote)
	require.Equal(t, 700*time.Millisecond, held.Hold, "a progress write inside the interval waits for its end")
	require.True(t, write("phase changed", false).Wrote, "a change beyond progress is never held")
	clk.SetTime(clk.Now().Add(time.Second))
	require.True(t, write("2 of 3 ready", true).Wrote, "the write after the hold goes")
	require.Equal(t, "2 of 3 ready", stored(t, c).Status.Message, "the last progress message is written")
}

func TestStatusWriterCoalesces(t *testing.T) {
	ctx := context.Background()
	c, fr := statusClient(t)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	type status = srv1alpha1.FailoverRequestStatus
	co := NewCoalescer(clk, time.Second, func(s *status) status {
		out := *s.DeepCopy()
		out.CompletionTime = nil // does not count as a change
		return out
	})
	w := NewStatusWriter(c, nil, WithPacer(co), WithClock(clk))
	write := func(msg string) Written {
		t.Helper()
		current := fr.Status.DeepCopy()
		fr.Status.Message = msg
		res, err := w.Write(ctx, fr, Change{Statuses: Statuses{Want: &fr.Status, Current: current}})
		require.NoError(t, err)
		return res
	}

	require.False(t, write("").Wrote, "a status equal to the one read is not written")
	require.True(t, write("a").Wrote)
	fr.Status.CompletionTime = &metav1.Time{Time: clk.Now()}
	require.False(t, write("a").Wrote, "a change of an ignored field alone is not written")
	clk.SetTime(clk.Now().Add(400 * time.Millisecond))
	held := write("b")
	require.False(t, held.Wrote)
	require.Equal(t, 600*time.Millisecond, held.Hold, "two writes of one object are an interval apart")
	clk.SetTime(clk.Now().Add(held.Hold))
	require.True(t, write("b").Wrote, "the trailing write after the hold writes the last change")
	require.Equal(t, "b", stored(t, c).Status.Message)
	last, ok := co.Last(client.ObjectKeyFromObject(fr).String())
	require.True(t, ok)
	require.Equal(t, "b", last.Message)

	w.Forget(client.ObjectKeyFromObject(fr).String())
	_, ok = co.Last(client.ObjectKeyFromObject(fr).String())
	require.False(t, ok)
}
