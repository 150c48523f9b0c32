package protection

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// DRBD peer authentication: every replica pair shares a random secret, the
// same on both clusters, in a Secret of the peer-auth namespace of the DR
// namespace (srv1alpha1.PeerAuthNamespace; the workload chart grants this
// identity get, create and update on Secrets there, and the agents get).
// quorum-manager generates it, and generates a new one (a rotation) when
// either side's Secret is missing, the two differ, or the request's
// srv1alpha1.RotatePeerSecretAnnotation has a value the Secrets were not
// made for.
//
// A rotation writes both Secrets first and the new revision into both
// DRBDResources after, so that an agent never renders a revision its Secret
// does not hold yet. DRBD authenticates a peer only when a connection is
// made (drbd kernel drbd_receiver.c, conn_connect calls drbd_do_auth), and
// adjust swaps the secret of an established connection without dropping it
// (drbd_nl.c adm_net_options), so replication goes on while the two agents
// apply the new file one after the other. Should the link drop in between,
// the handshake fails on the differing secrets and both sides go StandAlone,
// which is a disconnect, never a split brain: no side changes role, and the
// agent's reconnect connects them once both hold the new secret, with a
// resync of the blocks written meanwhile.
//
// The value never leaves the Secrets: no status, condition, event, log line
// or error holds it (errors name the Secret only).

// peerSecretBytes is the entropy of a shared secret: 256 bits, 43 characters
// of unpadded base64url, within DRBD's 63.
const peerSecretBytes = 32

// peerSecret is one side's peer-auth Secret as read.
type peerSecret struct {
	exists            bool
	value             []byte
	revision, rotated string
}

// newPeerSecret is a random shared secret and a random revision, which is not
// derived from it.
func newPeerSecret() (value []byte, revision string, err error) {
	raw := make([]byte, peerSecretBytes)
	rev := make([]byte, 8)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", fmt.Errorf("generating a DRBD shared secret: %w", err)
	}
	if _, err := rand.Read(rev); err != nil {
		return nil, "", fmt.Errorf("generating a DRBD shared secret: %w", err)
	}
	return []byte(base64.RawURLEncoding.EncodeToString(raw)), hex.EncodeToString(rev), nil
}

// peerSecretKey is the request's peer-auth Secret on each workload cluster.
func peerSecretKey(s *scope) client.ObjectKey {
	return client.ObjectKey{Namespace: srv1alpha1.PeerAuthNamespace(s.req.Namespace), Name: s.req.Status.DRBDResourceName}
}

// ensurePeerAuth makes both clusters hold the same peer-auth Secret for the
// request, rotating it when asked or when the sides disagree, and returns
// what the DRBDResources must name.
func (r *Reconciler) ensurePeerAuth(ctx context.Context, s *scope) (*srv1alpha1.DRBDPeerAuthentication, error) {
	key := peerSecretKey(s)
	want := s.req.Annotations[srv1alpha1.RotatePeerSecretAnnotation]
	var got [2]peerSecret
	for i, sd := range s.sides() {
		sec := &corev1.Secret{}
		err := sd.rc.Direct.Get(ctx, key, sec)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, remoteErr(sd.cluster, "reading peer-auth Secret "+key.String(), err)
		}
		got[i] = peerSecret{exists: true, value: sec.Data[srv1alpha1.PeerAuthSecretKey],
			revision: sec.Annotations[srv1alpha1.PeerAuthRevisionAnnotation], rotated: sec.Annotations[srv1alpha1.PeerAuthRotatedAnnotation]}
	}
	revision := got[0].revision
	if !current(got, want) {
		value, rev, err := newPeerSecret()
		if err != nil {
			return nil, err
		}
		for _, sd := range s.sides() {
			if err := r.writePeerSecret(ctx, s, sd, value, rev, want); err != nil {
				return nil, err
			}
		}
		revision = rev
	}
	return &srv1alpha1.DRBDPeerAuthentication{SecretRef: srv1alpha1.LocalObjectReference{Name: key.Name},
		Algorithm: srv1alpha1.PeerAuthSHA256, Revision: revision}, nil
}

// current reports whether both sides hold one usable secret made for the
// rotation token want.
func current(got [2]peerSecret, want string) bool {
	a, b := got[0], got[1]
	return a.exists && b.exists && len(a.value) > 0 && bytes.Equal(a.value, b.value) &&
		a.revision != "" && a.revision == b.revision && a.rotated == want && b.rotated == want
}

// writePeerSecret creates or replaces the Secret on one side.
func (r *Reconciler) writePeerSecret(ctx context.Context, s *scope, sd side, value []byte, revision, rotated string) error {
	key := peerSecretKey(s)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: labels(s.req, "peer-auth"),
			Annotations: map[string]string{srv1alpha1.PeerAuthRevisionAnnotation: revision, srv1alpha1.PeerAuthRotatedAnnotation: rotated}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{srv1alpha1.PeerAuthSecretKey: value},
	}
	err := sd.rc.Direct.Create(ctx, sec)
	if apierrors.IsAlreadyExists(err) {
		// Unconditional: whatever the Secret held, both sides get this value.
		err = sd.rc.Direct.Update(ctx, sec)
	}
	if err != nil {
		return remoteErr(sd.cluster, "writing peer-auth Secret "+key.String(), err)
	}
	return nil
}

// applyPeerAuth writes auth into a side's DRBDResource when it differs.
func applyPeerAuth(ctx context.Context, sd side, res *srv1alpha1.DRBDResource, auth *srv1alpha1.DRBDPeerAuthentication) error {
	if p := res.Spec.PeerAuthentication; p != nil && *p == *auth {
		return nil
	}
	patched := res.DeepCopy()
	patched.Spec.PeerAuthentication = auth.DeepCopy()
	if err := sd.rc.Direct.Patch(ctx, patched, client.MergeFromWithOptions(res, client.MergeFromWithOptimisticLock{})); err != nil {
		return remoteErr(sd.cluster, "writing peer authentication of DRBDResource "+res.Name, err)
	}
	*res = *patched
	return nil
}

// maintainPeerAuth keeps a Protected request's replicas on one current
// secret: it rotates on request or when a side's Secret went missing, and
// records the revision both sides are on in the request's status.
func (r *Reconciler) maintainPeerAuth(ctx context.Context, s *scope) error {
	if err := r.load(ctx, s); err != nil {
		return err
	}
	auth, err := r.ensurePeerAuth(ctx, s)
	if err != nil {
		return err
	}
	for _, sd := range s.sides() {
		res := &srv1alpha1.DRBDResource{}
		key := client.ObjectKey{Namespace: s.vmNamespace(), Name: s.req.Status.DRBDResourceName}
		if err := sd.rc.Direct.Get(ctx, key, res); err != nil {
			return remoteErr(sd.cluster, "reading DRBDResource "+key.Name, err)
		}
		if err := applyPeerAuth(ctx, sd, res, auth); err != nil {
			return err
		}
	}
	recordPeerAuth(s, auth)
	return r.persist(ctx, s)
}

// recordPeerAuth notes in the request's status the revision both sides'
// Secrets and DRBDResources now hold, and the rotation it was made for.
func recordPeerAuth(s *scope, auth *srv1alpha1.DRBDPeerAuthentication) {
	s.req.Status.PeerAuthentication = &srv1alpha1.PeerAuthStatus{Revision: auth.Revision,
		RotatedFor: s.req.Annotations[srv1alpha1.RotatePeerSecretAnnotation]}
}

// peerAuthDue reports whether a Protected request's reconcile reads its
// peer-auth Secrets: when its status records no revision yet (requests
// Protected before it did), when the rotation annotation asks for another
// secret than the one recorded, or at the periodic check, which shares the
// claim re-check's schedule (a Secret deleted by hand is replaced then).
// Every other reconcile, woken by any watched change, reads none.
func (r *Reconciler) peerAuthDue(req *srv1alpha1.ProtectionRequest) bool {
	pa := req.Status.PeerAuthentication
	if pa == nil || pa.Revision == "" || pa.RotatedFor != req.Annotations[srv1alpha1.RotatePeerSecretAnnotation] {
		return true
	}
	if !holdsClaim(req) {
		return false
	}
	_, due := r.rechecks.next(types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, req.UID, r.now(), r.recheckEvery())
	return due
}

// removePeerSecrets deletes the request's peer-auth Secret on both clusters
// once its DRBDResources are gone (no agent reads it any more). Deleting by
// name is idempotent, so a removal stopped anywhere resumes. A cluster whose
// workload release is older than the right to delete them (Forbidden) does
// not hold the removal up: the Secret stays, with a warning naming it.
func (r *Reconciler) removePeerSecrets(ctx context.Context, s *scope) error {
	if s.req.Status.DRBDResourceName == "" {
		return nil // never got past Validating: no Secret was written
	}
	key := peerSecretKey(s)
	for _, sd := range s.sides() {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		switch err := sd.rc.Direct.Delete(ctx, sec); {
		case err == nil, apierrors.IsNotFound(err):
		case apierrors.IsForbidden(err):
			r.warn(s.req, EventPeerSecretLeft, fmt.Sprintf("peer-auth Secret %s on %s was not deleted: quorum-manager may not delete it there "+
				"(a workload-control-plane release older than this quorum-manager); upgrade that release, or delete the Secret by hand", key, sd.cluster))
		default:
			return remoteErr(sd.cluster, "deleting peer-auth Secret "+key.String(), err)
		}
	}
	return nil
}
