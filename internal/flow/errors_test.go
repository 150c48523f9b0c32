package flow

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A Waiting or Stalled error made with %w keeps its cause: a caller still
// tells a NotFound from a Conflict behind it, and the message reads the same.
func TestWaitingAndStalledKeepTheirCause(t *testing.T) {
	cause := fmt.Errorf("reading group: %w", apierrors.NewNotFound(schema.GroupResource{Resource: "protectiongroups"}, "pg"))
	for _, e := range []*Error{
		Waiting("ClusterUnreachable", time.Second, "cannot reach target dr yet: %w", cause),
		Stalled("InvalidSpec", "cannot reach target dr yet: %w", cause),
	} {
		if !apierrors.IsNotFound(e) || !errors.Is(e, cause) {
			t.Fatalf("%v lost its cause", e)
		}
		if got, want := e.Error(), "cannot reach target dr yet: "+cause.Error(); got != want {
			t.Fatalf("message %q, want %q", got, want)
		}
		if As(fmt.Errorf("phase: %w", e)) != e {
			t.Fatalf("As does not find the flow error behind a wrap")
		}
	}
}
