package rgd

import (
	"testing"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
)

func rd(name, image string) *volsyncv1alpha1.ReplicationDestination {
	d := &volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if image != "" {
		now := metav1.Now()
		d.Status = &volsyncv1alpha1.ReplicationDestinationStatus{LastSyncTime: &now, LastSyncStartTime: &now,
			LatestImage: &corev1.TypedLocalObjectReference{Kind: "VolumeSnapshot", Name: image}}
	}
	return d
}

// A group's images are recorded together: only once every PVC has received a
// newer image than the recorded one, so a cycle that reached some PVCs only is
// never the group's point in time.
func TestRecordImagesOnlyWhenEveryPVCAdvanced(t *testing.T) {
	g := &drv1alpha1.ReplicationGroupDestination{}
	recordImages(g, []*volsyncv1alpha1.ReplicationDestination{rd("a", "a-1"), rd("b", "")})
	require.Empty(t, g.Status.LatestImages, "b has no image yet")

	recordImages(g, []*volsyncv1alpha1.ReplicationDestination{rd("a", "a-1"), rd("b", "b-1")})
	require.Equal(t, []string{"a-1", "b-1"}, names(g))

	recordImages(g, []*volsyncv1alpha1.ReplicationDestination{rd("a", "a-2"), rd("b", "b-1")})
	require.Equal(t, []string{"a-1", "b-1"}, names(g), "cycle 2 reached a only")

	recordImages(g, []*volsyncv1alpha1.ReplicationDestination{rd("a", "a-2"), rd("b", "b-2")})
	require.Equal(t, []string{"a-2", "b-2"}, names(g))
	require.NotNil(t, g.Status.LastSyncTime)
}

func names(g *drv1alpha1.ReplicationGroupDestination) []string {
	out := []string{}
	for _, li := range g.Status.LatestImages {
		out = append(out, li.Snapshot.Name)
	}
	return out
}
