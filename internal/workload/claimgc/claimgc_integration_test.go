package claimgc_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/internal/workload/claimgc"
	"github.com/siterecovery/siterecovery/test/harness"
)

const wait = 30 * time.Second

// grace is short here so that the test sees a young orphan wait for it and
// then go; the product's default is minutes.
const grace = 3 * time.Second

func claimOf(uid, ns string, port int32, claimedAt time.Time, minors ...int32) srv1alpha1.DRBDClaim {
	return srv1alpha1.DRBDClaim{RequestUID: uid, DRNamespace: ns, Request: "protect-" + uid, Port: port, Minors: minors, ClaimedAt: metav1.NewTime(claimedAt)}
}

func claimUIDs(t *testing.T, c client.Client) []string {
	t.Helper()
	a := &srv1alpha1.DRBDAllocation{}
	require.NoError(t, c.Get(t.Context(), types.NamespacedName{Name: srv1alpha1.DRBDAllocationName}, a))
	var out []string
	for _, cl := range a.Spec.Claims {
		out = append(out, cl.RequestUID)
	}
	slices.Sort(out)
	return out
}

func eventReasons(t *testing.T, c client.Client) map[string][]string {
	t.Helper()
	list := &corev1.EventList{}
	require.NoError(t, c.List(t.Context(), list, client.InNamespace(metav1.NamespaceDefault)))
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "DRBDAllocation" {
			out[e.Reason] = append(out[e.Reason], e.Message)
		}
	}
	return out
}

// TestOrphanedClaimsOfADeletedDRNamespaceAreReleased: when a DR namespace is
// deleted from a workload cluster after its quorum-manager was uninstalled, the
// claims of that namespace are released, so that their ports and minors serve
// new protections; a claim whose values a DRBDResource still uses, a claim
// younger than the grace, and every claim of a DR namespace that still exists
// stay.
func TestOrphanedClaimsOfADeletedDRNamespaceAreReleased(t *testing.T) {
	log.SetLogger(zap.New(zap.WriteTo(t.Output()), zap.UseDevMode(false)))
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, harness.Primary)
	cluster := zone.Clusters[harness.Primary]
	c := cluster.Client
	ctx := t.Context()

	for _, ns := range []string{"dr-old", "dr-live", "apps"} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	// A VM of dr-old is still replicated on port 7002: its DRBDResource stays
	// until somebody removes it.
	inUse := &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db"},
		Spec: srv1alpha1.DRBDResourceSpec{NodeName: "node-1", NodeID: 0, Port: 7002,
			Volumes: []srv1alpha1.DRBDVolume{{Number: 0, Minor: 40, BackingPVC: &srv1alpha1.LocalObjectReference{Name: "db-root"}}}},
	}
	require.NoError(t, c.Create(ctx, inUse))

	long := time.Now().Add(-time.Hour)
	require.NoError(t, c.Create(ctx, &srv1alpha1.DRBDAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.DRBDAllocationName},
		Spec: srv1alpha1.DRBDAllocationSpec{Claims: []srv1alpha1.DRBDClaim{
			claimOf("live", "dr-live", 7000, long, 1),
			claimOf("orphan", "dr-old", 7001, long, 2, 3),
			claimOf("used", "dr-old", 7002, long, 40),
		}},
	}))

	mgr, err := ctrl.NewManager(cluster.Config, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	require.NoError(t, err)
	require.NoError(t, claimgc.SetupWithManager(mgr, claimgc.Options{Grace: grace}))
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	// The quorum-manager of dr-old claims once more just before it is
	// uninstalled: that claim is younger than the grace when its namespace goes.
	a := &srv1alpha1.DRBDAllocation{}
	require.NoError(t, c.Get(ctx, types.NamespacedName{Name: srv1alpha1.DRBDAllocationName}, a))
	a.Spec.Claims = append(a.Spec.Claims, claimOf("young", "dr-old", 7004, time.Now(), 7))
	require.NoError(t, c.Update(ctx, a))

	// The DR namespace is deleted (a bare API server leaves it terminating,
	// which counts: nothing can be created in it again).
	require.NoError(t, c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dr-old"}}))

	require.Eventually(t, func() bool { return !slices.Contains(claimUIDs(t, c), "orphan") }, wait, 50*time.Millisecond,
		"the unused claim of the deleted DR namespace is released")
	require.Contains(t, claimUIDs(t, c), "live", "a claim of an existing DR namespace is its quorum-manager's to release")
	require.Contains(t, claimUIDs(t, c), "used", "a claim whose port a DRBDResource uses stays")

	require.Eventually(t, func() bool { return !slices.Contains(claimUIDs(t, c), "young") }, wait, 50*time.Millisecond,
		"the claim written just before the namespace went is released once it is older than the grace")
	require.Equal(t, []string{"live", "used"}, claimUIDs(t, c))

	require.Eventually(t, func() bool { return len(eventReasons(t, c)[claimgc.EventClaimHeld]) > 0 }, wait, 50*time.Millisecond)
	held := eventReasons(t, c)[claimgc.EventClaimHeld][0]
	require.Contains(t, held, "DRBDResource apps/db still uses its values", "the warning names what holds the claim")
	require.Contains(t, held, "port 7002")

	// Once the replica is removed, its claim goes too.
	require.NoError(t, c.Delete(ctx, inUse))
	require.Eventually(t, func() bool { return slices.Equal(claimUIDs(t, c), []string{"live"}) }, wait, 50*time.Millisecond,
		"the claim is released once no DRBDResource uses it")

	released := eventReasons(t, c)[claimgc.EventClaimReleased]
	require.Eventually(t, func() bool {
		released = eventReasons(t, c)[claimgc.EventClaimReleased]
		return len(released) == 3
	}, wait, 50*time.Millisecond, "one event per released claim: %v", released)
	require.Contains(t, released, "released the claim of ProtectionRequest dr-old/protect-orphan (uid orphan, port 7001, minors 2,3): DR namespace dr-old is gone from this cluster and no DRBDResource uses these values")
}
