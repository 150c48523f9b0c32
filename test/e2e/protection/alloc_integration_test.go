package protection_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

// Two quorum-managers, each serving its own DR namespace, replicate VMs to the
// same workload clusters at the same instant. Every DRBDResource of a node has
// a port and minors of its own, each request's claim is in both clusters'
// DRBDAllocation, and removing protection frees the claims for the next
// request.
func TestAllocationAcrossDRNamespaces(t *testing.T) {
	z := newZone(t)
	ctx := t.Context()
	q, p := z.Client(env.Quorum), z.Client(env.Primary)
	const staging = "dr-staging"
	addDRNamespace(t, z, staging, "staging")

	vms := map[string][]string{env.Namespace: {"prod-a", "prod-b", "prod-c"}, staging: {"stage-a", "stage-b", "stage-c"}}
	for _, names := range vms {
		for i, vm := range names {
			makePVC(t, p, vm+"-root", "standard", corev1.PersistentVolumeBlock)
			volumes := []string{vm + "-root"}
			if i == 0 {
				makePVC(t, p, vm+"-data", "standard", corev1.PersistentVolumeBlock)
				volumes = append(volumes, vm+"-data")
			}
			vols := make([]kubevirtv1.Volume, 0, len(volumes))
			for j, pvc := range volumes {
				vols = append(vols, pvcVolume(fmt.Sprintf("disk%d", j), pvc))
			}
			makeVM(t, p, vm, vols...)
		}
	}
	// Every request exists before either manager gets to allocate.
	for ns, names := range vms {
		for _, vm := range names {
			req := newRequestIn("protect-"+vm, vm, ns+"-pg")
			req.Namespace = ns
			if ns == staging {
				req.Spec.ZoneRef.Name = "staging"
			}
			require.NoError(t, q.Create(ctx, req))
		}
	}
	reqs := map[string]*srv1alpha1.ProtectionRequest{}
	for ns, names := range vms {
		for _, vm := range names {
			key := client.ObjectKey{Namespace: ns, Name: "protect-" + vm}
			env.Eventually(t, 2*wait, key.String()+" Protected", func() error {
				r := &srv1alpha1.ProtectionRequest{}
				if err := q.Get(ctx, key, r); err != nil {
					return err
				}
				if r.Status.Phase != srv1alpha1.ProtectionProtected {
					return fmt.Errorf("phase %q", r.Status.Phase)
				}
				reqs[key.String()] = r
				return nil
			})
		}
	}

	// Requests: a port and minors of their own across both DR namespaces.
	ports, minors := map[int32]string{}, map[int32]string{}
	for key, r := range reqs {
		require.NotContains(t, ports, r.Status.Port, "%s and %s share port %d", key, ports[r.Status.Port], r.Status.Port)
		ports[r.Status.Port] = key
		for _, v := range r.Status.Volumes {
			require.NotContains(t, minors, v.Minor, "%s and %s share minor %d", key, minors[v.Minor], v.Minor)
			minors[v.Minor] = key
		}
	}
	for _, cluster := range []string{env.Primary, env.DR} {
		c := z.Client(cluster)
		// Nodes: no two DRBDResources on one node share a port or a minor.
		list := &srv1alpha1.DRBDResourceList{}
		require.NoError(t, c.List(ctx, list))
		require.Len(t, list.Items, 6, cluster)
		type use struct {
			node string
			n    int32
		}
		portOn, minorOn := map[use]string{}, map[use]string{}
		for _, d := range list.Items {
			u := use{d.Spec.NodeName, d.Spec.Port}
			require.NotContains(t, portOn, u, "%s: %s and %s share port %d on node %s", cluster, d.Name, portOn[u], d.Spec.Port, d.Spec.NodeName)
			portOn[u] = d.Name
			for _, v := range d.Spec.Volumes {
				u := use{d.Spec.NodeName, v.Minor}
				require.NotContains(t, minorOn, u, "%s: %s and %s share minor %d on node %s", cluster, d.Name, minorOn[u], v.Minor, d.Spec.NodeName)
				minorOn[u] = d.Name
			}
		}
		// The cluster's DRBDAllocation holds each request's values.
		require.NoError(t, claimsExact(ctx, c, reqs), cluster)
	}

	// An admin deletes the DR cluster's allocation anyway (the workload
	// webhook refuses anyone else): each Protected request's re-check writes
	// its claim back with exactly its values.
	d := z.Client(env.DR)
	require.NoError(t, d.Delete(ctx, allocationOf(t, d)))
	env.Eventually(t, 2*wait, "every claim back on the DR cluster", func() error { return claimsExact(ctx, d, reqs) })
	require.NoError(t, claimsExact(ctx, p, reqs), "the primary's allocation is untouched")

	// Removing staging's protection frees its claims on both clusters; the
	// lowest freed port goes to the next request.
	var freed []int32
	for _, vm := range vms[staging] {
		r := reqs[staging+"/protect-"+vm]
		freed = append(freed, r.Status.Port)
		require.NoError(t, q.Delete(ctx, r))
	}
	for _, vm := range vms[staging] {
		env.Eventually(t, 2*wait, "protect-"+vm+" gone", func() error {
			return absent(q, &srv1alpha1.ProtectionRequest{ObjectMeta: metav1.ObjectMeta{Namespace: staging, Name: "protect-" + vm}})
		})
	}
	for _, cluster := range []string{env.Primary, env.DR} {
		for _, cl := range allocationOf(t, z.Client(cluster)).Spec.Claims {
			assert.Equal(t, env.Namespace, cl.DRNamespace, "%s: claim %s/%s left after its request went", cluster, cl.DRNamespace, cl.Request)
		}
	}
	makePVC(t, p, "prod-d-root", "standard", corev1.PersistentVolumeBlock)
	makeVM(t, p, "prod-d", pvcVolume("disk0", "prod-d-root"))
	require.NoError(t, q.Create(ctx, newRequestIn("protect-prod-d", "prod-d", env.Namespace+"-pg")))
	env.Eventually(t, wait, "protect-prod-d Protected", phaseIs(ctx, q, "protect-prod-d", srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	assert.Equal(t, slices.Min(freed), getRequest(t, q, "protect-prod-d").Status.Port, "the lowest freed port is used again")
}

// addDRNamespace adds a second DR namespace with its own zone over the same
// workload clusters, and runs its own quorum-manager, as a second release of
// the quorum-control-plane chart would.
func addDRNamespace(t *testing.T, z *zone, ns, zoneName string) {
	t.Helper()
	ctx := t.Context()
	q := z.Client(env.Quorum)
	for name, c := range z.Clusters {
		require.NoError(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		if name != env.Quorum {
			// The workload chart's namespace for the DR namespace's DRBD peer
			// secrets (drbd-peer-auth.yaml).
			require.NoError(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.PeerAuthNamespace(ns)}}))
		}
	}
	prod := &srv1alpha1.ProtectionZone{}
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.ZoneName}, prod))
	for _, zc := range prod.Spec.Clusters {
		sec := &corev1.Secret{}
		require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: zc.KubeconfigSecretRef.Name}, sec))
		require.NoError(t, q.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sec.Name}, Data: sec.Data}))
	}
	require.NoError(t, q.Create(ctx, &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: zoneName}, Spec: prod.Spec}))
	z.Manager(t, env.Quorum, "quorum-manager-"+ns, ctrl.Options{Cache: boot.CacheOptions(ns)}, func(mgr ctrl.Manager) error {
		_, err := setup.AddToManager(mgr, quorumOptions)
		return err
	})
}

// claimsExact checks that c's DRBDAllocation holds one claim per request of
// reqs, with exactly its port and minors, and no other claim.
func claimsExact(ctx context.Context, c client.Client, reqs map[string]*srv1alpha1.ProtectionRequest) error {
	a := &srv1alpha1.DRBDAllocation{}
	if err := c.Get(ctx, client.ObjectKey{Name: srv1alpha1.DRBDAllocationName}, a); err != nil {
		return err
	}
	claims := map[string]srv1alpha1.DRBDClaim{}
	for _, cl := range a.Spec.Claims {
		claims[cl.DRNamespace+"/"+cl.Request] = cl
	}
	if len(claims) != len(reqs) || len(a.Spec.Claims) != len(reqs) {
		return fmt.Errorf("%d claims, want %d", len(a.Spec.Claims), len(reqs))
	}
	for key, r := range reqs {
		cl, ok := claims[key]
		if !ok {
			return fmt.Errorf("no claim of %s", key)
		}
		var want []int32
		for _, v := range r.Status.Volumes {
			want = append(want, v.Minor)
		}
		if cl.RequestUID != string(r.UID) || cl.Port != r.Status.Port || !slices.Equal(cl.Minors, want) {
			return fmt.Errorf("claim of %s is uid %s port %d minors %v, want uid %s port %d minors %v", key, cl.RequestUID, cl.Port, cl.Minors, r.UID, r.Status.Port, want)
		}
	}
	return nil
}

func allocationOf(t *testing.T, c client.Client) *srv1alpha1.DRBDAllocation {
	t.Helper()
	a := &srv1alpha1.DRBDAllocation{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: srv1alpha1.DRBDAllocationName}, a))
	return a
}
