package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli"
	"github.com/siterecovery/siterecovery/internal/cli/validate"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestCLI runs every command against one zone; the subtests run in order and
// the last ones move the group.
func TestCLI(t *testing.T) {
	z := newZone(t)
	ctx := context.Background()

	t.Run("status shows clusters, group, VMs on both sides and replication", func(t *testing.T) {
		// The zone is ready when the primary runs and replication is healthy;
		// the DR copy's VM states reach the quorum group through pg-sync,
		// which may come a moment later.
		env.Eventually(t, timeout, "status with every cluster's VM state", func() error {
			r := z.cli(ctx, "status")
			if r.code != cli.ExitOK {
				return fmt.Errorf("exit %d: %s", r.code, r.stderr)
			}
			for _, want := range []string{group, "direct", "apps/vm-00", env.Primary + "=Running", env.DR + "=Stopped", "Established"} {
				if !strings.Contains(r.stdout, want) {
					return fmt.Errorf("no %q in the output", want)
				}
			}
			return nil
		})
		r := z.cli(ctx, "status", group, "-o", "json")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		var rep cli.StatusReport
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		g := rep.Namespaces[0].Groups[0]
		assert.Equal(t, env.Primary, g.ActiveCluster)
		assert.True(t, g.RPOMet)
		assert.Len(t, g.Replication, len(vms))
	})

	t.Run("validate passes on a healthy zone", func(t *testing.T) {
		r := z.cli(ctx, "validate")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "0 problems")
		rep, code := z.validate(ctx)
		require.Equal(t, cli.ExitOK, code, "%+v", rep.Results)
		for _, check := range []string{"kubeconfig", "reachable", "permissions", "crd-versions", "drbd-agent", "drbd-sync", "lost-quorum", "standby", "snapshot-class", "clock-skew", "rpo"} {
			assert.NotEmpty(t, find(rep, check, validate.OK), "no ok %s", check)
		}
	})

	t.Run("validate finds a lost-quorum taint", func(t *testing.T) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dr-worker-2"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: srv1alpha1.LostQuorumTaintKey, Effect: corev1.TaintEffectNoSchedule}}}}
		z.create(env.DR, node)
		rep, code := z.validate(ctx)
		assert.Equal(t, cli.ExitProblems, code)
		res := find(rep, "lost-quorum", validate.Problem)
		require.NotEmpty(t, res)
		assert.Contains(t, res[0].Message, "dr-worker-2")
		require.NoError(t, z.Client(env.DR).Delete(ctx, node))
	})

	t.Run("validate finds a missing network", z.missingNetwork)

	t.Run("validate finds a failed DRBD link", func(t *testing.T) {
		res := srv1alpha1.DRBDResourceName("vm-01")
		require.NoError(t, z.DRBD(t).Disconnect(res))
		env.Eventually(t, timeout, "validate reports the link", func() error {
			rep, _ := z.validate(ctx)
			for _, r := range find(rep, "drbd-sync", validate.Problem) {
				if strings.HasSuffix(r.Target, "/vm-01") {
					return nil
				}
			}
			return fmt.Errorf("no drbd-sync problem for vm-01")
		})
		require.NoError(t, z.DRBD(t).Connect(res))
		env.Eventually(t, timeout, "link back in sync", func() error {
			rep, _ := z.validate(ctx)
			if p := find(rep, "drbd-sync", validate.Problem); len(p) > 0 {
				return fmt.Errorf("%+v", p)
			}
			return nil
		})
	})

	t.Run("validate finds a missing permission", func(t *testing.T) {
		z.limitedZone(ctx)
		r := z.cli(ctx, "validate", "zone", "limited", "-o", "json")
		assert.Equal(t, cli.ExitProblems, r.code)
		var rep validate.Report
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		res := find(&rep, "permissions", validate.Problem)
		require.Len(t, res, 2, "%+v", rep.Results)
		// The rights come from quorum-manager's generated workload Roles:
		// DRBD resources cluster-wide, the group copy in the DR namespace.
		assert.Contains(t, res[0].Message, "create,delete,get,list,patch,watch drbdresources.siterecovery.trilio.io;")
		assert.Contains(t, res[0].Message, "; create,delete,patch protectiongroups.siterecovery.trilio.io in dr-production")
		assert.NotContains(t, res[0].Message, "list,watch protectiongroups", "the identity may list group copies")
	})

	t.Run("a user without rights to Secrets sees the quorum view", func(t *testing.T) {
		z.viewer(ctx)
		var r result
		// The group's per-site state reaches the quorum view once pg-sync has
		// copied it from the workload copies, which it does on a short delay.
		env.Eventually(t, timeout, "the quorum view shows the group running", func() error {
			r = z.cli(ctx, "--as", "viewer", "status")
			if r.code != cli.ExitOK || !strings.Contains(r.stdout, "(group running)") {
				return fmt.Errorf("exit %d: %s%s", r.code, r.stdout, r.stderr)
			}
			return nil
		})
		assert.Contains(t, r.stdout, "quorum view")
		assert.Contains(t, r.stdout, "not allowed to read the kubeconfig Secret")
		r = z.cli(ctx, "--as", "viewer", "validate", "zone", env.ZoneName, "-o", "json")
		var rep validate.Report
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
		assert.Len(t, find(&rep, "kubeconfig", validate.Warning), 2)
		assert.Len(t, find(&rep, "reachable", validate.OK), 2, "quorum-manager's view of reachability")
		assert.NotEmpty(t, find(&rep, "rpo", validate.OK))
	})

	t.Run("gather writes a redacted bundle", func(t *testing.T) {
		z.create(env.Quorum, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "notify-token"},
			StringData: map[string]string{"token": secretToken}})
		dir := t.TempDir()
		r := z.cli(ctx, "gather", "--dir", dir, "--since", "1h")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		files := readBundle(t, strings.TrimSpace(r.stdout))
		for _, want := range []string{"README.txt", "validate.txt", "status.json", "quorum/protectiongroups.yaml", "quorum/secrets.yaml",
			"clusters/production/primary-cluster/apps/drbdresources.yaml", "clusters/production/dr-cluster/apps/virtualmachines.yaml"} {
			assert.Contains(t, files, want)
		}
		assert.Contains(t, files["README.txt"], "quorum/protectiongroups.yaml")
		assert.Contains(t, files["quorum/secrets.yaml"], "notify-token")
		z.assertRedacted(t, files)
	})

	t.Run("test-failover --wait boots the DR copies and passes its checks", func(t *testing.T) {
		r := z.cli(ctx, "test-failover", group, "--wait", "--keep")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		assertInOrder(t, r.stdout, "Pending", "Snapshotting", "Restoring", "Booting", "Verifying", "CleaningUp", "Succeeded",
			"Checks of TestFailover", "(Succeeded)")
		for _, vm := range vms {
			assert.Regexp(t, vm+`\s+VMReady\s+true`, r.stdout)
		}
		tfs := &srv1alpha1.TestFailoverList{}
		require.NoError(t, z.Client(env.Quorum).List(ctx, tfs, client.InNamespace(env.Namespace)))
		require.Len(t, tfs.Items, 1, "--keep keeps the finished TestFailover")
		tf := tfs.Items[0]
		assert.Equal(t, srv1alpha1.TestFailoverSucceeded, tf.Status.Phase)
		assert.Equal(t, env.DR, tf.Spec.TargetCluster, "the cluster the group is not active on")
		require.Len(t, tf.Status.Results, len(vms))
		for _, res := range tf.Status.Results {
			assert.True(t, res.Passed, "%s/%s: %s", res.VM, res.Check, res.Message)
		}
		require.NoError(t, z.Client(env.Quorum).Delete(ctx, &tf))
		z.waitRunning(env.Primary)
	})

	t.Run("validate finds a stopped API server", func(t *testing.T) {
		require.NoError(t, z.Clusters[env.DR].StopAPIServer())
		rep, code := z.validate(ctx)
		assert.Equal(t, cli.ExitProblems, code)
		res := find(rep, "reachable", validate.Problem)
		require.Len(t, res, 1, "%+v", rep.Results)
		assert.Equal(t, env.ZoneName+"/"+env.DR, res[0].Target)
		require.NoError(t, z.Clusters[env.DR].StartAPIServer())
	})

	t.Run("failover --wait streams the phases and ends with the timeline", func(t *testing.T) {
		z.waitReachable()
		r := z.cli(ctx, "failover", group, "--to", env.DR, "--wait", "--reason", "maintenance of the primary site")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		assertInOrder(t, r.stdout, "Pending", "StoppingOnSource", "WaitingForDRBD", "StartingOnTarget", "Completed", "Timeline of FailoverRequest", "total ")
		frs := &srv1alpha1.FailoverRequestList{}
		require.NoError(t, z.Client(env.Quorum).List(ctx, frs, client.InNamespace(env.Namespace)))
		require.Len(t, frs.Items, 1)
		assert.Equal(t, "maintenance of the primary site", frs.Items[0].Annotations[cli.ReasonAnnotation])
		assert.NotEmpty(t, frs.Items[0].Annotations[cli.RequestedByAnnotation])
		z.waitRunning(env.DR)
	})

	t.Run("an unplanned failover needs the group's name", func(t *testing.T) {
		r := z.cli(ctx, "failover", group, "--to", env.Primary, "--unplanned")
		assert.Equal(t, cli.ExitUsage, r.code)
		assert.Contains(t, r.stderr, "--confirm "+group)
	})

	t.Run("Ctrl-C stops waiting, not the failback", func(t *testing.T) {
		wctx, cancel := context.WithCancel(ctx)
		go func() {
			// Cancel once the request exists: the CLI is then waiting.
			env.Eventually(t, timeout, "failback request", func() error {
				frs := &srv1alpha1.FailoverRequestList{}
				if err := z.Client(env.Quorum).List(ctx, frs, client.InNamespace(env.Namespace)); err != nil || len(frs.Items) < 2 {
					return fmt.Errorf("not yet")
				}
				return nil
			})
			cancel()
		}()
		r := z.cli(wctx, "failback", group, "--wait")
		assert.Equal(t, cli.ExitStillRunning, r.code)
		assert.Contains(t, r.stderr, "goes on")
		z.waitRunning(env.Primary)
	})

	t.Run("protect --wait protects a VM, unprotect removes it", func(t *testing.T) {
		vm := env.AppNS + "/" + protectVM
		r := z.cli(ctx, "protect", vm, "--group", "web")
		assert.Equal(t, cli.ExitUsage, r.code, "two zones now: --zone is needed")
		r = z.cli(ctx, "protect", vm, "--group", "web", "--zone", env.ZoneName, "--wait")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		assertInOrder(t, r.stdout, "Pending", "Validating", "CreatingReplication", "SwitchingFrontend", "WaitingForInitialSync",
			"AddingToGroup", "Protected", "Timeline of ProtectionRequest protect-apps-web-01 (Protected)", "total ")
		pr := &srv1alpha1.ProtectionRequest{}
		require.NoError(t, z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "protect-apps-" + protectVM}, pr))
		assert.Equal(t, srv1alpha1.ProtectionProtected, pr.Status.Phase)
		pg := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "web"}, pg))
		assert.Contains(t, pg.Spec.VirtualMachines, srv1alpha1.VirtualMachineReference{Namespace: env.AppNS, Name: protectVM})
		r = z.cli(ctx, "status", "web")
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, vm)

		r = z.cli(ctx, "unprotect", vm)
		require.Equal(t, cli.ExitOK, r.code, r.stderr)
		env.Eventually(t, timeout, "ProtectionRequest gone", func() error {
			err := z.Client(env.Quorum).Get(ctx, client.ObjectKeyFromObject(pr), pr)
			if err == nil {
				return fmt.Errorf("still there, phase %s", pr.Status.Phase)
			}
			return client.IgnoreNotFound(err)
		})
		r = z.cli(ctx, "unprotect", vm)
		assert.Equal(t, cli.ExitError, r.code)
	})

	t.Run("runbooks", z.runbooks)
}

const secretToken = "s3cr3t-notify-token-0123456789"

// assertRedacted fails when any credential of the zone is in the bundle.
func (z *zone) assertRedacted(t *testing.T, files map[string]string) {
	creds := []string{secretToken}
	for _, name := range []string{env.Primary, env.DR, env.Quorum} {
		kc, err := clientcmd.Load(z.Clusters[name].Kubeconfig)
		require.NoError(t, err)
		for _, a := range kc.AuthInfos {
			creds = append(creds, string(a.ClientKeyData), encode(a.ClientKeyData), strings.Split(strings.TrimSpace(string(a.ClientKeyData)), "\n")[1])
		}
	}
	for path, content := range files {
		for _, c := range creds {
			if strings.Contains(content, c) {
				t.Errorf("%s holds a credential (%.12s...)", path, c)
			}
		}
		assert.NotContains(t, content, "PRIVATE KEY-----\n", path)
	}
}

// limitedZone adds a zone whose kubeconfig Secret's identity, a ServiceAccount
// with a token from the TokenRequest API, may only read ProtectionGroups on the
// primary cluster.
func (z *zone) limitedZone(ctx context.Context) {
	c := z.Client(env.Primary)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "limited"}}
	z.create(env.Primary, sa)
	z.create(env.Primary, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "limited"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"siterecovery.trilio.io"}, Resources: []string{"protectiongroups"}, Verbs: []string{"get", "list", "watch"}}}})
	require.NoError(z.t, c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "limited"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "limited"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}}))
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	require.NoError(z.t, c.SubResource("token").Create(ctx, sa, tr))
	kc, err := clientcmd.Load(z.Clusters[env.Primary].Kubeconfig)
	require.NoError(z.t, err)
	for _, a := range kc.AuthInfos {
		*a = clientcmdapi.AuthInfo{Token: tr.Status.Token}
	}
	data, err := clientcmd.Write(*kc)
	require.NoError(z.t, err)
	z.create(env.Quorum, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "limited-kubeconfig"},
		Data: map[string][]byte{srv1alpha1.KubeconfigSecretKey: data}})
	ref := srv1alpha1.SecretKeyReference{Name: "limited-kubeconfig"}
	z.create(env.Quorum, &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "limited"},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
			{Name: "limited-a", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: ref},
			{Name: "limited-b", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: ref}}}})
}

// viewer may read the DR namespace's siterecovery objects on the quorum
// cluster, but not its Secrets.
func (z *zone) viewer(ctx context.Context) {
	z.create(env.Quorum, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "viewer"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"siterecovery.trilio.io", "dr.siterecovery.trilio.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list"}},
		}})
	require.NoError(z.t, z.Client(env.Quorum).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "viewer"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "viewer", APIGroup: "rbac.authorization.k8s.io"}}}))
}

func (z *zone) validate(ctx context.Context) (*validate.Report, int) {
	z.t.Helper()
	r := z.cli(ctx, "validate", "zone", env.ZoneName, "-o", "json")
	rep := &validate.Report{}
	require.NoError(z.t, json.Unmarshal([]byte(r.stdout), rep), r.stderr)
	return rep, r.code
}

// waitReachable waits until quorum-manager reaches both workload clusters.
func (z *zone) waitReachable() {
	env.Eventually(z.t, timeout, "zone ready", func() error {
		pz := &srv1alpha1.ProtectionZone{}
		if err := z.Client(env.Quorum).Get(z.ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.ZoneName}, pz); err != nil {
			return err
		}
		for _, c := range pz.Status.Conditions {
			if c.Type == srv1alpha1.ConditionReady && c.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("zone not ready: %+v", pz.Status.Conditions)
	})
}

func find(r *validate.Report, check string, s validate.Score) []validate.Result {
	var out []validate.Result
	for _, res := range r.Results {
		if res.Check == check && res.Score == s {
			out = append(out, res)
		}
	}
	return out
}

func assertInOrder(t *testing.T, s string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(s[at:], p)
		if !assert.GreaterOrEqual(t, i, 0, "%q missing after offset %d", p, at) {
			return
		}
		at += i + len(p)
	}
}
