package flow

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// PatchStatus sends only what its change altered, from the read it was given:
// another writer's field survives, a stale read is refused, and a change that
// alters nothing writes nothing and records no event.
func TestPatchStatusWritesOnlyItsFields(t *testing.T) {
	ctx := context.Background()
	c, read := statusClient(t)
	rec := record.NewFakeRecorder(10)

	// Another controller writes the rest of the status meanwhile.
	other := read.DeepCopy()
	other.Status.Message = "the owner's message"
	require.NoError(t, c.Status().Update(ctx, other))

	setPhase := func(fr *srv1alpha1.FailoverRequest) { fr.Status.Phase = srv1alpha1.FailoverCompleted }
	_, err := PatchStatus(ctx, c, rec, read, setPhase, Event{Type: "Normal", Reason: "Recorded", Message: "x"})
	require.True(t, apierrors.IsConflict(err), "a patch from a stale read must fail with a conflict, got %v", err)
	require.Empty(t, rec.Events, "no event for a status that was not written")

	fresh := stored(t, c)
	wrote, err := PatchStatus(ctx, c, rec, fresh, setPhase, Event{Type: "Normal", Reason: "Recorded", Message: "x"})
	require.NoError(t, err)
	require.True(t, wrote)
	got := stored(t, c)
	require.Equal(t, srv1alpha1.FailoverCompleted, got.Status.Phase)
	require.Equal(t, "the owner's message", got.Status.Message, "the patch carries only the field it changed")
	require.Equal(t, "Normal Recorded x", <-rec.Events)

	wrote, err = PatchStatus(ctx, c, rec, got, setPhase)
	require.NoError(t, err)
	require.False(t, wrote, "a change that alters nothing writes nothing")

	require.NoError(t, c.Delete(ctx, got))
	wrote, err = PatchStatus(ctx, c, rec, got, func(fr *srv1alpha1.FailoverRequest) { fr.Status.Message = "gone" })
	require.NoError(t, err, "an object deleted meanwhile is not an error")
	require.False(t, wrote)
}
