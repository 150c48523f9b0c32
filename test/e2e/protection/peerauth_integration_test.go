package protection_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestPeerSecretsEqualAndRotated protects a VM and finds the same random
// DRBD shared secret in its peer-auth Secret on both clusters, named with one
// revision by both DRBDResources, whose agents run DRBD on it; the rotation
// annotation and a Secret deleted on one side (at the periodic check) each bring a new value to both
// sides and both replicas, which stay connected and in sync; and no value
// appears in the request, the DRBDResources or any event. The protection
// first waits for the DR cluster's release to list the VM's namespace
// (protectVMOnceListed).
func TestPeerSecretsEqualAndRotated(t *testing.T) {
	z := newZone(t)
	ctx := t.Context()
	q, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)
	name := protectVMOnceListed(t, q, p, d, "vm1").Status.DRBDResourceName
	key := client.ObjectKey{Namespace: srv1alpha1.PeerAuthNamespace(env.Namespace), Name: name}
	clusters := map[string]client.Client{env.Primary: p, env.DR: d}

	// current is the value, other than prev, that both sides hold once they
	// agree, and on which both DRBDResources are, configured and connected.
	current := func(t *testing.T, what string, prev []byte) []byte {
		t.Helper()
		var value []byte
		env.Eventually(t, wait, what, func() error {
			var secrets [2]corev1.Secret
			for i, c := range []client.Client{p, d} {
				if err := c.Get(ctx, key, &secrets[i]); err != nil {
					return err
				}
			}
			v, rev := secrets[0].Data[srv1alpha1.PeerAuthSecretKey], secrets[0].Annotations[srv1alpha1.PeerAuthRevisionAnnotation]
			if bytes.Equal(v, prev) {
				return errors.New("the secret is not new yet")
			}
			if len(v) < 40 || !bytes.Equal(v, secrets[1].Data[srv1alpha1.PeerAuthSecretKey]) || rev != secrets[1].Annotations[srv1alpha1.PeerAuthRevisionAnnotation] {
				return errors.New("the two sides' Secrets differ")
			}
			for cluster, c := range clusters {
				r := &srv1alpha1.DRBDResource{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: name}, r); err != nil {
					return err
				}
				pa := r.Spec.PeerAuthentication
				if pa == nil || pa.SecretRef.Name != name || pa.Revision != rev {
					return fmt.Errorf("%s: DRBDResource not on the Secret's revision", cluster)
				}
				if !meta.IsStatusConditionTrue(r.Status.Conditions, srv1alpha1.ConditionConfigured) || !meta.IsStatusConditionTrue(r.Status.Conditions, srv1alpha1.ConditionConnected) {
					return fmt.Errorf("%s: replica not configured and connected: %+v", cluster, r.Status.Conditions)
				}
			}
			value = v
			return nil
		})
		return value
	}
	first := current(t, "one secret on both sides", nil)
	sourceLabelsRepaired(t, p)

	req := getRequest(t, q, "protect-vm1")
	req.Annotations = map[string]string{srv1alpha1.RotatePeerSecretAnnotation: "2026-01"}
	require.NoError(t, q.Update(ctx, req))
	second := current(t, "rotated on request", first)

	require.NoError(t, d.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}))
	// A Secret lost on one side is replaced on both at the request's next
	// periodic check (every couple of seconds here), not at every reconcile.
	third := current(t, "replaced after one side lost it", second)

	for what, list := range map[string]client.ObjectList{"requests": &srv1alpha1.ProtectionRequestList{}, "events": &eventsv1.EventList{}, "core events": &corev1.EventList{}} {
		require.NoError(t, q.List(ctx, list))
		data, err := json.Marshal(list)
		require.NoError(t, err)
		for _, v := range [][]byte{first, second, third} {
			assert.False(t, bytes.Contains(data, v), "a secret in the quorum cluster's %s", what)
		}
	}
	for cluster, c := range clusters {
		for what, list := range map[string]client.ObjectList{"DRBDResources": &srv1alpha1.DRBDResourceList{}, "events": &eventsv1.EventList{}, "core events": &corev1.EventList{}} {
			require.NoError(t, c.List(ctx, list))
			data, err := json.Marshal(list)
			require.NoError(t, err)
			for _, v := range [][]byte{first, second, third} {
				assert.False(t, bytes.Contains(data, v), "a secret in %s's %s", cluster, what)
			}
		}
	}
}
