package protection_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestSteadyProtectedReconcilesReadNoSecrets: a Protected request records in
// its status the revision of the DRBD shared secret both sides hold, and its
// reconciles (here woken by annotation changes, as any watched change wakes
// it) read neither peer-auth Secret, counted by the workload clusters' API
// servers. A rotation asked for reads and rewrites them, and records the new
// revision. The periodic check is an hour away here.
func TestSteadyProtectedReconcilesReadNoSecrets(t *testing.T) {
	q := quorumOptions
	q.ClaimRecheckInterval = time.Hour
	z := newZoneWith(t, env.Options{}, q)
	ctx := t.Context()
	qc, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)
	req := protectVM(t, qc, p, "vm1")
	key := client.ObjectKey{Namespace: srv1alpha1.PeerAuthNamespace(env.Namespace), Name: req.Status.DRBDResourceName}
	revision := func(c client.Client) string {
		sec := &corev1.Secret{}
		require.NoError(t, c.Get(ctx, key, sec))
		return sec.Annotations[srv1alpha1.PeerAuthRevisionAnnotation]
	}
	first := revision(p)
	require.Equal(t, &srv1alpha1.PeerAuthStatus{Revision: first}, req.Status.PeerAuthentication, "the status records the Secrets' revision")

	secretGets := func() float64 {
		n := 0.0
		for _, c := range []string{env.Primary, env.DR} {
			counts, err := z.Clusters[c].RequestCounts(ctx)
			require.NoError(t, err)
			n += counts["GET secrets/"]
		}
		return n
	}
	// touch changes an annotation, which wakes the request, and waits until
	// the controller has reconciled it once more.
	touch := func(annotations map[string]string) {
		before := reconciles(t)
		r := getRequest(t, qc, "protect-vm1")
		if r.Annotations == nil {
			r.Annotations = map[string]string{}
		}
		for k, v := range annotations {
			r.Annotations[k] = v
		}
		require.NoError(t, qc.Update(ctx, r))
		env.Eventually(t, wait, "a reconcile of protect-vm1", func() error {
			if reconciles(t) <= before {
				return errors.New("not reconciled yet")
			}
			return nil
		})
	}
	before := secretGets()
	for i := range 5 {
		touch(map[string]string{"test/touch": fmt.Sprint(i)})
	}
	// Our own reads below come after the count.
	require.Zero(t, secretGets()-before, "steady reconciles of a Protected request read peer-auth Secrets")

	before = secretGets()
	touch(map[string]string{srv1alpha1.RotatePeerSecretAnnotation: "2026-02"})
	env.Eventually(t, wait, "the rotation recorded", func() error {
		pa := getRequest(t, qc, "protect-vm1").Status.PeerAuthentication
		if pa == nil || pa.RotatedFor != "2026-02" || pa.Revision == first {
			return fmt.Errorf("status.peerAuthentication %+v", pa)
		}
		return nil
	})
	require.GreaterOrEqual(t, secretGets()-before, 2.0, "a rotation reads both sides' Secrets")
	pa := getRequest(t, qc, "protect-vm1").Status.PeerAuthentication
	require.Equal(t, pa.Revision, revision(p))
	require.Equal(t, pa.Revision, revision(d))
}

// reconciles is how many reconciles the protection controllers of this test
// process have finished, by controller-runtime's metric.
func reconciles(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	n := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == protection.ControllerName {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}
