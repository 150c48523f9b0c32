package claimgc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func claim(uid, ns string, port int32, age time.Duration, now time.Time, minors ...int32) srv1alpha1.DRBDClaim {
	return srv1alpha1.DRBDClaim{RequestUID: uid, DRNamespace: ns, Request: "protect-" + uid, Port: port, Minors: minors, ClaimedAt: metav1.NewTime(now.Add(-age))}
}

func resource(name string, port int32, minors ...int32) srv1alpha1.DRBDResource {
	d := srv1alpha1.DRBDResource{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
	d.Spec.Port = port
	for i, m := range minors {
		d.Spec.Volumes = append(d.Spec.Volumes, srv1alpha1.DRBDVolume{Number: int32(i), Minor: m})
	}
	return d
}

func uids(cs []srv1alpha1.DRBDClaim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.RequestUID)
	}
	return out
}

func TestJudgeReleasesOnlyUnusedOldClaimsOfGoneNamespaces(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	grace := 10 * time.Minute
	claims := []srv1alpha1.DRBDClaim{
		claim("live", "dr-live", 7000, time.Hour, now, 1),
		claim("orphan", "dr-gone", 7001, time.Hour, now, 2, 3),
		claim("port-used", "dr-gone", 7002, time.Hour, now, 4),
		claim("minor-used", "dr-gone", 7003, time.Hour, now, 5, 6),
		claim("young", "dr-gone", 7004, 4*time.Minute, now, 7),
		claim("younger", "dr-gone", 7005, 8*time.Minute, now, 8),
	}
	resources := []srv1alpha1.DRBDResource{
		resource("db", 7002, 40),
		resource("web", 7100, 6),
		resource("live-db", 7000, 1),
	}
	v := judge(claims, map[string]bool{"dr-gone": true}, resources, now, grace)

	require.Equal(t, []string{"orphan"}, uids(v.release), "only the old orphan that no DRBDResource uses is released; the live namespace's claim is its quorum-manager's")
	require.Len(t, v.held, 2)
	require.Equal(t, "port-used", v.held[0].claim.RequestUID)
	require.Equal(t, types.NamespacedName{Namespace: "apps", Name: "db"}, v.held[0].by, "a shared port holds the claim")
	require.Equal(t, "minor-used", v.held[1].claim.RequestUID)
	require.Equal(t, types.NamespacedName{Namespace: "apps", Name: "web"}, v.held[1].by, "a shared minor holds the claim")
	require.Equal(t, 2*time.Minute, v.recheckAfter, "the next look is when the younger-than-grace orphan closest to the grace passes it")
}

func TestJudgeLeavesEveryClaimWhileNoNamespaceIsGone(t *testing.T) {
	now := time.Now()
	v := judge([]srv1alpha1.DRBDClaim{claim("a", "dr-a", 7000, 24*time.Hour, now, 1)}, map[string]bool{}, nil, now, time.Minute)
	require.Empty(t, v.release)
	require.Empty(t, v.held)
	require.Zero(t, v.recheckAfter)
}
