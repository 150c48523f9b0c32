package failover

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	remotefake "github.com/siterecovery/siterecovery/internal/quorum/remote/fake"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// A replica's change wakes the requests that decide on replicas (Pending may
// resync a fenced-off target, WaitingForDRBD moves the role); a group copy's
// change wakes every unfinished request of the namespace.
func TestRemoteEventsWakeTheRequestsThatReadThem(t *testing.T) {
	var objs []client.Object
	for _, p := range []srv1alpha1.FailoverPhase{srv1alpha1.FailoverPending, srv1alpha1.FailoverStoppingOnSource,
		srv1alpha1.FailoverWaitingForDRBD, srv1alpha1.FailoverStartingOnTarget, srv1alpha1.FailoverCompleted} {
		objs = append(objs, &srv1alpha1.FailoverRequest{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: string(p)},
			Status: srv1alpha1.FailoverRequestStatus{Phase: p}})
	}
	r := &Reconciler{Client: remotefake.NewClient(scheme.New(), objs...)}
	woken := func(obj client.Object) []string {
		var names []string
		for _, req := range r.activeRequestsOfRemote(context.Background(), key(drCluster), obj) {
			names = append(names, req.Name)
		}
		return names
	}
	require.ElementsMatch(t, []string{"Pending", "WaitingForDRBD"}, woken(&srv1alpha1.DRBDResource{}))
	require.ElementsMatch(t, []string{"Pending", "StoppingOnSource", "WaitingForDRBD", "StartingOnTarget"}, woken(&srv1alpha1.ProtectionGroup{}))
}
