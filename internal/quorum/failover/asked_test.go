package failover

import (
	"testing"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func TestAskedRoles(t *testing.T) {
	var a askedRoles
	t0 := time.Unix(1000, 0)
	demote := askedRole{role: srv1alpha1.RoleSecondary, quorum: srv1alpha1.QuorumForRole(srv1alpha1.RoleSecondary), at: t0}
	if a.recent("dr/app/vm-1", demote, t0) {
		t.Fatal("nothing was sent yet")
	}
	a.record("dr/app/vm-1", demote)
	if !a.recent("dr/app/vm-1", demote, t0.Add(askedFor/2)) {
		t.Fatal("the same values sent just now must not be sent again")
	}
	promote := askedRole{role: srv1alpha1.RolePrimary, quorum: srv1alpha1.QuorumForRole(srv1alpha1.RolePrimary), at: t0}
	if a.recent("dr/app/vm-1", promote, t0.Add(askedFor/2)) {
		t.Fatal("other values must be sent")
	}
	if a.recent("primary/app/vm-1", demote, t0.Add(askedFor/2)) {
		t.Fatal("another replica must be sent its own")
	}
	if a.recent("dr/app/vm-1", demote, t0.Add(askedFor)) {
		t.Fatal("after askedFor a spec that still differs is patched again")
	}
	a.record("dr/app/vm-2", askedRole{role: srv1alpha1.RolePrimary, at: t0.Add(askedFor)})
	if _, kept := a.m["dr/app/vm-1"]; kept {
		t.Fatal("expired entries are forgotten")
	}
}
