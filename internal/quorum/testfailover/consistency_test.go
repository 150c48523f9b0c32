package testfailover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// TestGroupRecords: a test's point goes into the group's status when the
// group asks for Application consistency, or when it changes what the group
// records; a crash-mode group with nothing recorded, or the same kind of
// point recorded, is not written.
func TestGroupRecords(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(int64(s), 0)) }
	crash := &srv1alpha1.ConsistencyPoint{Time: at(2), Source: pointSource, Consistency: srv1alpha1.ConsistencyCrash}
	group := func(mode srv1alpha1.ConsistencyMode, last *srv1alpha1.ConsistencyPoint) *srv1alpha1.ProtectionGroup {
		g := &srv1alpha1.ProtectionGroup{}
		if mode != "" {
			g.Spec.Consistency = &srv1alpha1.ConsistencySpec{Mode: mode}
		}
		if last != nil {
			g.Status.Consistency = &srv1alpha1.ConsistencyStatus{LastPoint: last}
		}
		return g
	}
	sameLater := crash.DeepCopy()
	sameLater.Time = at(1)
	appPoint := &srv1alpha1.ConsistencyPoint{Time: at(1), Source: pointSource, Consistency: srv1alpha1.ConsistencyApplication}
	fellBack := &srv1alpha1.ConsistencyPoint{Time: at(1), Source: pointSource, Consistency: srv1alpha1.ConsistencyCrash, CrashConsistentVMs: []string{"app/db"}}

	require.False(t, groupRecords(group("", nil), crash), "crash-mode group, nothing recorded")
	require.False(t, groupRecords(group(srv1alpha1.ConsistencyCrash, nil), crash), "mode Crash written out")
	require.False(t, groupRecords(group("", sameLater), crash), "only the time differs")
	require.True(t, groupRecords(group("", appPoint), crash), "an Application point must not stay the newest")
	require.True(t, groupRecords(group("", fellBack), crash), "the crash VMs change")
	require.True(t, groupRecords(group(srv1alpha1.ConsistencyApplication, nil), crash), "application mode records every point")
	require.True(t, groupRecords(group(srv1alpha1.ConsistencyApplication, sameLater), crash))
}
