package protectiongroup

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// A failover step records one event per group once all its replicas share the
// new role, none while they are on their way and none for a role they kept.
func TestRecordRoleTransition(t *testing.T) {
	drbd := func(roles ...string) *srv1alpha1.GroupDRBDStatus {
		st := &srv1alpha1.GroupDRBDStatus{}
		for _, r := range roles {
			st.Replicas = append(st.Replicas, srv1alpha1.ReplicaRoleStatus{Role: r})
		}
		return st
	}
	for _, c := range []struct {
		name          string
		before, after *srv1alpha1.GroupDRBDStatus
		want          []string
	}{
		{"all promoted", drbd("Secondary", "Secondary"), drbd("Primary", "Primary"),
			[]string{"Normal ReplicaRolesChanged all 2 replicas on this cluster are Primary (were Secondary)"}},
		{"half way", drbd("Secondary", "Secondary"), drbd("Primary", "Secondary"), nil},
		{"rest of the way", drbd("Primary", "Secondary"), drbd("Primary", "Primary"),
			[]string{"Normal ReplicaRolesChanged all 2 replicas on this cluster are Primary"}},
		{"unchanged", drbd("Primary"), drbd("Primary"), nil},
		{"no replicas", nil, drbd(), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(4)
			r := &Reconciler{Recorder: rec}
			s := &scope{group: &srv1alpha1.ProtectionGroup{}, before: &srv1alpha1.ProtectionGroup{}}
			s.before.Status.DRBD, s.group.Status.DRBD = c.before, c.after
			r.recordRoleTransition(s)
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			require.Equal(t, c.want, got)
		})
	}
}
