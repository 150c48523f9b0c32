package admission

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// Who the webhooks trust: a DR namespace's quorum identity acts only on its
// own DR namespace's objects and only in the application namespaces listed
// for it; trusted users and groups act everywhere; anyone else nowhere.
func TestCallerScopes(t *testing.T) {
	ids := Identities{
		Users:                 []string{"system:serviceaccount:siterecovery-system:pg-controller"},
		Groups:                DefaultGroups,
		DRNamespaces:          []string{"dr-production", "dr-staging"},
		ApplicationNamespaces: map[string][]string{"dr-production": {"apps"}},
	}
	prod := ids.caller(authenticationv1.UserInfo{Username: "system:serviceaccount:dr-production:quorum-manager"})
	assert.True(t, prod.owns("dr-production"))
	assert.False(t, prod.owns("dr-staging"), "one DR namespace's token moves another's objects")
	assert.False(t, prod.owns(""), "an object of no DR namespace")
	assert.True(t, prod.protects("apps"))
	assert.False(t, prod.protects("billing"), "a namespace its release does not list")

	staging := ids.caller(authenticationv1.UserInfo{Username: "system:serviceaccount:dr-staging:quorum-manager"})
	assert.False(t, staging.protects("apps"), "a DR namespace with no list protects nothing once lists are set")

	other := ids.caller(authenticationv1.UserInfo{Username: "system:serviceaccount:dr-production:default"})
	assert.False(t, other.owns("dr-production"), "another ServiceAccount of the DR namespace")
	assert.False(t, other.protects("apps"))

	gc := ids.caller(authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:generic-garbage-collector",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}})
	assert.True(t, gc.owns("dr-staging") && gc.protects("billing"), "Kubernetes' own controllers")

	msg := prod.outsideApplications("starting standby VM billing/db", "billing")
	for _, want := range []string{"billing", "dr-production", "quorumAccess.applicationNamespaces.dr-production", "apps"} {
		assert.Contains(t, msg, want)
	}
	assert.Contains(t, prod.otherNamespace("DRBDResource x", "dr-staging"), "belongs to DR namespace dr-staging")
}

// A relabel is caught whether a product label's value changes, appears or
// goes, and the DR namespace an object belongs to is read from what it is.
func TestProductLabelsAndOwner(t *testing.T) {
	obj := func(labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace("apps")
		u.SetLabels(labels)
		return u
	}
	labelled := obj(map[string]string{srv1alpha1.DRNamespaceLabel: "dr-production", "team": "a"})
	assert.Empty(t, changedProductLabel(labelled, obj(map[string]string{srv1alpha1.DRNamespaceLabel: "dr-production", "team": "b"})),
		"a label of the user's own")
	assert.Equal(t, srv1alpha1.DRNamespaceLabel, changedProductLabel(labelled, obj(map[string]string{"team": "a"})), "removed")
	assert.Equal(t, srv1alpha1.DRNamespaceLabel, changedProductLabel(obj(nil), labelled), "added")
	assert.Equal(t, srv1alpha1.DRNamespaceLabel, changedProductLabel(labelled, obj(map[string]string{srv1alpha1.DRNamespaceLabel: "dr-staging"})), "changed")

	assert.Equal(t, "dr-production", drNamespaceOf("DRBDResource", labelled))
	assert.Equal(t, "apps", drNamespaceOf("ProtectionGroup", labelled), "a local group copy lives in its DR namespace")

	if who := (Identities{}).who(); !strings.Contains(who, "nobody") {
		t.Fatalf("no identity configured: %q", who)
	}
}
