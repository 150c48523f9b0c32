package validate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// An Offloaded or VolSync group is scored on its DRPlacementControl, its
// DRPolicy's peer classes and the age of its last sync.
func TestDRPolicyChecks(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	group := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "db"}}
	policy := func(peers ...string) *drv1alpha1.DRPolicy {
		p := &drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "five-minutes"},
			Spec: drv1alpha1.DRPolicySpec{DRClusters: []string{"east", "west"}, SchedulingInterval: "5m"}}
		for _, sc := range peers {
			p.Status.PeerClasses = append(p.Status.PeerClasses, drv1alpha1.PeerClass{StorageClassName: sc})
		}
		return p
	}
	drpc := func(synced time.Duration) *drv1alpha1.DRPlacementControl {
		d := &drv1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: "dr", Name: "db-drpc"},
			Spec: drv1alpha1.DRPlacementControlSpec{ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: "db"},
				DRPolicyRef: srv1alpha1.LocalObjectReference{Name: "five-minutes"}}}
		if synced > 0 {
			d.Status.LastGroupSyncTime = &metav1.Time{Time: now.Add(-synced)}
		}
		return d
	}
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		want    map[string]Score
		message string
	}{
		{"no DRPlacementControl", nil, map[string]Score{"peer-classes": Problem}, "no DRPlacementControl names this group"},
		{"no peer class", []client.Object{policy(), drpc(time.Minute)}, map[string]Score{"peer-classes": Problem}, "no StorageClass replicates between east and west"},
		{"fresh sync", []client.Object{policy("fast"), drpc(4 * time.Minute)}, map[string]Score{"peer-classes": OK, "last-sync": OK}, "4m0s ago"},
		{"stale sync", []client.Object{policy("fast"), drpc(11 * time.Minute)}, map[string]Score{"peer-classes": OK, "last-sync": Problem}, "more than twice the interval 5m"},
		{"never synced", []client.Object{policy("fast"), drpc(0)}, map[string]Score{"peer-classes": OK, "last-sync": Warning}, "no sync has completed yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.objs...).Build()
			z := &zoneCheck{r: &Report{}, in: Input{Quorum: c}}
			z.drPolicy(context.Background(), group, now)
			got := map[string]Score{}
			var messages string
			for _, r := range z.r.Results {
				got[r.Check] = r.Score
				messages += r.Message + "\n"
			}
			assert.Equal(t, tc.want, got)
			assert.Contains(t, messages, tc.message)
		})
	}
}

func TestSchedulingInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{"0m": 0, "5m": 5 * time.Minute, "2h": 2 * time.Hour, "1d": 24 * time.Hour} {
		got, err := schedulingInterval(in)
		assert.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "m", "5s", "x5m"} {
		_, err := schedulingInterval(bad)
		assert.Error(t, err, bad)
	}
}
