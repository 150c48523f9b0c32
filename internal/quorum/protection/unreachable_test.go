package protection

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// A workload API server that does not answer holds the request with
// ClusterUnreachable, naming the cluster and what failed, never with the
// client's error: that carries the request's URL and its query.
func TestUnreachableNamesTheClusterNotTheURL(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/apis/siterecovery.trilio.io/v1alpha1/namespaces/apps/drbdresources?labelSelector=siterecovery.trilio.io%2Frequest%3Dprotect-web&token=secret",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	r := &Reconciler{}
	err := r.unreachable(&scope{}, remoteErr("dr-cluster", "listing DRBDResources", refused), "protection")
	e := flow.As(err)
	if e == nil || e.Reason != srv1alpha1.ReasonClusterUnreachable || e.Kind != flow.KindWaiting || e.RequeueAfter != unreachableRetry {
		t.Fatalf("got %#v, want a ClusterUnreachable wait", err)
	}
	want := "cluster dr-cluster is unreachable: listing DRBDResources failed (connection refused); protection resumes when it answers again"
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
	for _, leak := range []string{"https://", "labelSelector", "token", "10.0.0.1"} {
		if strings.Contains(err.Error(), leak) {
			t.Fatalf("message %q shows %q", err.Error(), leak)
		}
	}

	// An API server that answered with an error is not unreachable.
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "siterecovery.trilio.io", Resource: "drbdresources"}, "", errors.New("no right"))
	answered := remoteErr("dr-cluster", "listing DRBDResources", forbidden)
	if got := r.unreachable(&scope{}, answered, "protection"); !errors.Is(got, answered) {
		t.Fatalf("an answered call became %v", got)
	}
	// So is an error that is not a call to a workload cluster.
	other := flow.Transient(ReasonRequestFailed, errors.New("listing ProtectionRequests: conflict"))
	if got := r.unreachable(&scope{}, other, "protection"); !errors.Is(got, other) {
		t.Fatalf("a quorum call became %v", got)
	}
}

func TestNoAnswer(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{os.NewSyscallError("connect", syscall.ECONNREFUSED), "connection refused"},
		{context.DeadlineExceeded, "timed out"},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, "no connection"},
	} {
		got, ok := noAnswer(c.err)
		if !ok || got != c.want {
			t.Errorf("noAnswer(%v) = %q, %v; want %q", c.err, got, ok, c.want)
		}
	}
	if _, ok := noAnswer(errors.New("the server could not find the requested resource")); ok {
		t.Error("an answer is taken for no answer")
	}
}
