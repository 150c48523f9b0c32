package nodeagent

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
)

// Reasons of the Configured condition while peer authentication is not ready.
const (
	// ReasonPeerSecretMissing: the Secret the spec names cannot be read yet.
	ReasonPeerSecretMissing = "PeerSecretMissing"
	// ReasonPeerSecretPending: the Secret holds another revision than the
	// spec asks for (a rotation on its way).
	ReasonPeerSecretPending = "PeerSecretPending"
)

// peerSecretRetry is how soon a resource waiting for its peer-auth Secret
// looks again: the agent does not watch Secrets (it may only get them).
const peerSecretRetry = 10 * time.Second

// PeerSecrets reads the DRBD peer-authentication Secrets. Reader must be
// uncached: the agent's rights on Secrets are `get` in the peer-auth
// namespaces only (a Role per DR namespace from the workload chart), which
// allows neither a cache's list nor watch. A value is read once per
// revision the spec names; a rotation changes the revision.
type PeerSecrets struct {
	Reader client.Reader

	mu   sync.Mutex
	read map[types.NamespacedName]peerSecret
}

// peerSecret is a Secret's value as read for a revision.
type peerSecret struct {
	revision string
	auth     drbd.PeerAuth
}

// peerAuth is the peer authentication to render for obj, nil when its spec
// asks for none. Its errors name the Secret and never hold its value.
func (p *PeerSecrets) peerAuth(ctx context.Context, obj *srv1alpha1.DRBDResource) (*drbd.PeerAuth, error) {
	spec := obj.Spec.PeerAuthentication
	if spec == nil {
		return nil, nil
	}
	drNS := obj.Labels[srv1alpha1.DRNamespaceLabel]
	if drNS == "" {
		return nil, stalledOn(srv1alpha1.ConditionConfigured, srv1alpha1.ReasonInvalidSpec, nil,
			fmt.Sprintf("spec.peerAuthentication needs the %s label, which names the namespace of the peer secrets", srv1alpha1.DRNamespaceLabel))
	}
	alg := string(spec.Algorithm)
	if alg == "" {
		alg = string(srv1alpha1.PeerAuthSHA256) // the CRD default
	}
	// The namespace comes from the DR namespace, never from the spec.
	key := types.NamespacedName{Namespace: srv1alpha1.PeerAuthNamespace(drNS), Name: spec.SecretRef.Name}
	if p == nil || p.Reader == nil {
		return nil, stalledOn(srv1alpha1.ConditionConfigured, ReasonPeerSecretMissing, nil,
			"spec.peerAuthentication is set but this agent reads no peer secrets")
	}
	p.mu.Lock()
	cached, ok := p.read[key]
	p.mu.Unlock()
	if ok && cached.revision == spec.Revision {
		a := cached.auth
		a.Alg = alg
		return &a, nil
	}
	sec := &corev1.Secret{}
	if err := p.Reader.Get(ctx, key, sec); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return nil, waitOn(srv1alpha1.ConditionConfigured, ReasonPeerSecretMissing, peerSecretRetry, nil,
				fmt.Sprintf("waiting for the peer-auth Secret %s (%s); DRBD does not connect without it", key, apiReason(err)))
		}
		return nil, fmt.Errorf("reading peer-auth Secret %s: %s", key, apiReason(err))
	}
	if got := sec.Annotations[srv1alpha1.PeerAuthRevisionAnnotation]; got != spec.Revision {
		return nil, waitOn(srv1alpha1.ConditionConfigured, ReasonPeerSecretPending, peerSecretRetry, nil,
			fmt.Sprintf("peer-auth Secret %s holds revision %q, the spec asks for %q; waiting for quorum-manager to write it", key, got, spec.Revision))
	}
	auth := drbd.PeerAuth{Alg: alg, Secret: string(sec.Data[srv1alpha1.PeerAuthSecretKey])}
	if auth.Secret == "" {
		return nil, waitOn(srv1alpha1.ConditionConfigured, ReasonPeerSecretMissing, peerSecretRetry, nil,
			fmt.Sprintf("peer-auth Secret %s has no key %q", key, srv1alpha1.PeerAuthSecretKey))
	}
	p.mu.Lock()
	if p.read == nil {
		p.read = map[types.NamespacedName]peerSecret{}
	}
	p.read[key] = peerSecret{revision: spec.Revision, auth: auth}
	p.mu.Unlock()
	return &auth, nil
}

// apiReason is the API status reason of err (NotFound, Forbidden, ...), or
// its text when it has none; neither carries a Secret's data.
func apiReason(err error) string {
	if r := apierrors.ReasonForError(err); r != "" {
		return string(r)
	}
	return err.Error()
}
