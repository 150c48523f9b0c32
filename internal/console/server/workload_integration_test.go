package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/server"
)

type check struct {
	Name    string
	Passed  bool
	Unknown bool
	Message string
}

type preflight struct {
	Target string
	Checks []check
	Passed bool
}

func (p preflight) check(t *testing.T, name string) check {
	t.Helper()
	for _, c := range p.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, p.Checks)
	return check{}
}

type zoneVMs struct {
	Cluster string
	Visible bool
	Reason  string
	VMs     []struct{ Namespace, Name, Group string }
}

// TestWorkloadReads shows what the console reads from the workload clusters,
// and for whom: the VMs of the zone's primary for the protect form, and the
// lost-quorum taints on the target for the failover preflight. Only a user
// whom the quorum cluster lets read a cluster's kubeconfig Secret gets them;
// any other user is told what is not shown and why. The kubeconfig's
// credential appears in no answer and no log line.
func TestWorkloadReads(t *testing.T) {
	q := startQuorum(t, server.Options{LoginAttempts: 1000}, "primary", "dr")
	ctx := context.Background()
	secrets := map[string]string{"primary-kubeconfig": "primary", "dr-kubeconfig": "dr"}
	for name, site := range secrets {
		q.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: name},
			Data: map[string][]byte{srv1alpha1.KubeconfigSecretKey: q.sites[site].Kubeconfig}})
	}
	q.role("site-reader",
		rbacv1.PolicyRule{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"},
			ResourceNames: []string{"primary-kubeconfig", "dr-kubeconfig"}})

	// The primary runs the group's two VMs and one not yet protected.
	primary := q.sites["primary"].Client
	require.NoError(t, primary.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}))
	for _, name := range []string{"vm-00", "vm-01", "web-01"} {
		require.NoError(t, primary.Create(ctx, &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name},
			Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}}))
	}
	// On the DR cluster the group's replica sits on dr-node-1, which carries
	// the lost-quorum taint, and another group of the namespace runs there.
	dr := q.sites["dr"].Client
	require.NoError(t, dr.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}))
	require.NoError(t, dr.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: drNamespace}}))
	require.NoError(t, dr.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dr-node-1"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: srv1alpha1.LostQuorumTaintKey, Effect: corev1.TaintEffectNoSchedule}}}}))
	require.NoError(t, dr.Create(ctx, &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: srv1alpha1.DRBDResourceName("vm-00"),
			Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: groupName}},
		Spec: srv1alpha1.DRBDResourceSpec{NodeName: "dr-node-1", NodeID: 1, Port: 7000, Role: srv1alpha1.RoleSecondary,
			Volumes: []srv1alpha1.DRBDVolume{{Number: 0, Minor: 1000, BackingPVC: &srv1alpha1.LocalObjectReference{Name: "vm-00-disk"}}}},
	}))
	other := &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: "billing-pg"}}
	require.NoError(t, dr.Create(ctx, other))
	other.Status.CurrentState = srv1alpha1.StateRunning
	require.NoError(t, dr.Status().Update(ctx, other))

	vmsPath := "/api/namespaces/" + drNamespace + "/zones/production/vms"
	preflightPath := "/api/namespaces/" + drNamespace + "/groups/" + groupName + "/preflight?target=dr-cluster"
	var browsers []*browser
	signedIn := func(user string) *browser {
		b := q.browser()
		browsers = append(browsers, b)
		require.Equal(t, http.StatusOK, b.login(q.tokens[user]).code)
		return b
	}
	vmsOf := func(t *testing.T, b *browser) zoneVMs {
		var v zoneVMs
		r := b.get(vmsPath)
		require.Equal(t, http.StatusOK, r.code, string(r.body))
		r.json(t, &v)
		return v
	}

	t.Run("a user who may not read the kubeconfig Secrets is told what is not shown", func(t *testing.T) {
		b := signedIn("viewer")
		v := vmsOf(t, b)
		assert.False(t, v.Visible)
		assert.Empty(t, v.VMs)
		assert.Equal(t, "primary-cluster", v.Cluster)
		assert.Contains(t, v.Reason, "kubeconfig Secret "+drNamespace+"/primary-kubeconfig, which you may not read")

		var p preflight
		b.get(preflightPath).json(t, &p)
		c := p.check(t, "Taint conflicts")
		assert.True(t, c.Unknown, "%+v", c)
		assert.False(t, c.Passed)
		assert.False(t, p.Passed, "a preflight with a check not made does not pass")
		assert.Contains(t, c.Message, "dr-kubeconfig")
	})

	t.Run("a user who may read them sees the primary's VMs and the target's taint conflict", func(t *testing.T) {
		b := signedIn("site-reader")
		v := vmsOf(t, b)
		require.True(t, v.Visible, v.Reason)
		got := map[string]string{}
		for _, vm := range v.VMs {
			got[vm.Namespace+"/"+vm.Name] = vm.Group
		}
		assert.Equal(t, map[string]string{"apps/vm-00": groupName, "apps/vm-01": groupName, "apps/web-01": ""}, got)

		var p preflight
		b.get(preflightPath).json(t, &p)
		c := p.check(t, "Taint conflicts")
		assert.False(t, c.Passed)
		assert.False(t, c.Unknown)
		assert.Equal(t, "dr-node-1 on dr-cluster carries "+srv1alpha1.LostQuorumTaintKey+
			" and groups billing-pg run there: the failover will hold until they stop, unless it is forced", c.Message)
	})

	t.Run("with the other group stopped the taint is no conflict", func(t *testing.T) {
		require.NoError(t, dr.Get(ctx, client.ObjectKeyFromObject(other), other))
		other.Status.CurrentState = srv1alpha1.StateStopped
		require.NoError(t, dr.Status().Update(ctx, other))
		b := signedIn("site-reader")
		var p preflight
		b.get(preflightPath).json(t, &p)
		c := p.check(t, "Taint conflicts")
		assert.True(t, c.Passed, c.Message)
		assert.Contains(t, c.Message, "no other group runs on dr-cluster")
	})

	t.Run("no credential of a kubeconfig leaves the server", func(t *testing.T) {
		for site, c := range q.sites {
			creds := credentialsIn(c.Kubeconfig)
			require.NotEmpty(t, creds, "the %s kubeconfig carries a credential", site)
			for _, secret := range creds {
				for _, b := range browsers {
					assert.NotContains(t, b.seen.String(), secret, "a %s credential in an answer", site)
				}
				assert.NotContains(t, q.log.String(), secret, "a %s credential in the log", site)
			}
		}
	})
}

// credentialsIn returns the credential values of a kubeconfig: its token and
// client key, which must never leave the console.
func credentialsIn(kubeconfig []byte) []string {
	var out []string
	for _, line := range strings.Split(string(kubeconfig), "\n") {
		line = strings.TrimSpace(line)
		for _, key := range []string{"token:", "client-key-data:", "client-certificate-data:"} {
			if v, ok := strings.CutPrefix(line, key); ok && strings.TrimSpace(v) != "" {
				out = append(out, strings.Trim(strings.TrimSpace(v), `"`))
			}
		}
	}
	return out
}
