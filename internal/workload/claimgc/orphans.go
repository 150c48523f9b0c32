package claimgc

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// verdict is what judge decided for the claims of gone DR namespaces.
type verdict struct {
	// release are the claims to drop.
	release []srv1alpha1.DRBDClaim
	// held are orphans kept because a DRBDResource uses one of their values,
	// with that resource.
	held []heldClaim
	// recheckAfter is when the youngest orphan kept for its age passes the
	// grace; zero when there is none.
	recheckAfter time.Duration
}

type heldClaim struct {
	claim srv1alpha1.DRBDClaim
	by    types.NamespacedName
}

// judge sorts the claims of DR namespaces that are gone. A claim of a live DR
// namespace is never touched: its quorum-manager owns it.
func judge(claims []srv1alpha1.DRBDClaim, gone map[string]bool, resources []srv1alpha1.DRBDResource, now time.Time, grace time.Duration) verdict {
	var v verdict
	for _, c := range claims {
		if !gone[c.DRNamespace] {
			continue
		}
		if age := now.Sub(c.ClaimedAt.Time); age < grace {
			if wait := grace - age; v.recheckAfter == 0 || wait < v.recheckAfter {
				v.recheckAfter = wait
			}
			continue
		}
		if by, used := usedBy(c, resources); used {
			v.held = append(v.held, heldClaim{claim: c, by: by})
			continue
		}
		v.release = append(v.release, c)
	}
	return v
}

// usedBy returns a DRBDResource that uses the claim's port or one of its
// minors.
func usedBy(c srv1alpha1.DRBDClaim, resources []srv1alpha1.DRBDResource) (types.NamespacedName, bool) {
	for i := range resources {
		d := &resources[i]
		if d.Spec.Port == c.Port || slices.ContainsFunc(d.Spec.Volumes, func(v srv1alpha1.DRBDVolume) bool { return slices.Contains(c.Minors, v.Minor) }) {
			return types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, true
		}
	}
	return types.NamespacedName{}, false
}
