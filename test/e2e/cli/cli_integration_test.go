package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

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

// TestCLI runs every command against one zone. Each step starts from the
// healthy zone and puts back what it changed (runSteps), so that any step
// runs alone and in any order.
func TestCLI(t *testing.T) {
	z := newZone(t)
	ctx := context.Background()
	z.runSteps(t, []step{
		{"status shows clusters, group, VMs on both sides and replication", func(t *testing.T) {
			// The DR copy's VM states reach the quorum group through pg-sync,
			// which may come a moment after the zone is healthy.
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
		}},

		{"validate passes on a healthy zone", func(t *testing.T) {
			r := z.cli(ctx, "validate")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, "0 problems")
			rep, code := z.validate(ctx)
			require.Equal(t, cli.ExitOK, code, "%+v", rep.Results)
			for _, check := range []string{"kubeconfig", "reachable", "permissions", "crd-versions", "drbd-agent", "drbd-sync", "lost-quorum", "standby", "snapshot-class", "clock-skew", "rpo"} {
				assert.NotEmpty(t, find(rep, check, validate.OK), "no ok %s", check)
			}
		}},

		{"validate finds a lost-quorum taint", func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dr-worker-2"},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: srv1alpha1.LostQuorumTaintKey, Effect: corev1.TaintEffectNoSchedule}}}}
			z.createUntilEnd(t, env.DR, node)
			rep, code := z.validate(ctx)
			assert.Equal(t, cli.ExitProblems, code)
			res := find(rep, "lost-quorum", validate.Problem)
			require.NotEmpty(t, res)
			assert.Contains(t, res[0].Message, "dr-worker-2")
		}},

		{"validate finds a missing network", z.missingNetwork},

		{"validate finds a failed DRBD link", func(t *testing.T) {
			res := srv1alpha1.DRBDResourceName("vm-01")
			require.NoError(t, z.DRBD(t).Disconnect(res))
			t.Cleanup(func() { require.NoError(t, z.DRBD(t).Connect(res)) })
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
		}},

		{"validate finds a missing permission", func(t *testing.T) {
			z.limitedZone(t, "limited")
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
		}},

		{"a user without rights to Secrets sees the quorum view", func(t *testing.T) {
			z.viewer(t)
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
		}},

		{"gather writes a redacted bundle", func(t *testing.T) {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "notify-token"},
				StringData: map[string]string{"token": secretToken}}
			z.createUntilEnd(t, env.Quorum, secret)
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
		}},

		{"test-failover --wait boots the DR copies and passes its checks", func(t *testing.T) {
			before := z.names(t, &srv1alpha1.TestFailoverList{})
			r := z.cli(ctx, "test-failover", group, "--wait", "--keep")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			assertInOrder(t, r.stdout, "Pending", "Snapshotting", "Restoring", "Booting", "Verifying", "CleaningUp", "Succeeded",
				"Checks of TestFailover", "(Succeeded)")
			for _, vm := range vms {
				assert.Regexp(t, vm+`\s+VMReady\s+true`, r.stdout)
			}
			made := z.created(t, &srv1alpha1.TestFailoverList{}, before)
			require.Len(t, made, 1, "--keep keeps the finished TestFailover")
			tf := &srv1alpha1.TestFailover{}
			require.NoError(t, z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: made[0]}, tf))
			assert.Equal(t, srv1alpha1.TestFailoverSucceeded, tf.Status.Phase)
			assert.Equal(t, env.DR, tf.Spec.TargetCluster, "the cluster the group is not active on")
			require.Len(t, tf.Status.Results, len(vms))
			for _, res := range tf.Status.Results {
				assert.True(t, res.Passed, "%s/%s: %s", res.VM, res.Check, res.Message)
			}
			require.NoError(t, z.Client(env.Quorum).Delete(ctx, tf))
			z.waitRunning(env.Primary)
		}},

		{"validate finds a stopped API server", func(t *testing.T) {
			require.NoError(t, z.Clusters[env.DR].StopAPIServer())
			t.Cleanup(func() { require.NoError(t, z.Clusters[env.DR].StartAPIServer()) })
			rep, code := z.validate(ctx)
			assert.Equal(t, cli.ExitProblems, code)
			res := find(rep, "reachable", validate.Problem)
			require.Len(t, res, 1, "%+v", rep.Results)
			assert.Equal(t, env.ZoneName+"/"+env.DR, res[0].Target)
		}},

		// One step: the failback is what puts the failover back.
		{"failover --wait streams the phases, Ctrl-C stops waiting for the failback but not the failback", func(t *testing.T) {
			before := z.names(t, &srv1alpha1.FailoverRequestList{})
			r := z.cli(ctx, "failover", group, "--to", env.DR, "--wait", "--reason", "maintenance of the primary site")
			require.Equal(t, cli.ExitOK, r.code, r.stderr)
			assertInOrder(t, r.stdout, "Pending", "StoppingOnSource", "WaitingForDRBD", "StartingOnTarget", "Completed", "Timeline of FailoverRequest", "total ")
			made := z.created(t, &srv1alpha1.FailoverRequestList{}, before)
			require.Len(t, made, 1)
			fr := &srv1alpha1.FailoverRequest{}
			require.NoError(t, z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: made[0]}, fr))
			assert.Equal(t, "maintenance of the primary site", fr.Annotations[cli.ReasonAnnotation])
			assert.NotEmpty(t, fr.Annotations[cli.RequestedByAnnotation])
			z.waitRunning(env.DR)

			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				defer cancel()
				// Cancel once the failback request exists: the CLI is then waiting.
				for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
					frs := &srv1alpha1.FailoverRequestList{}
					if err := z.Client(env.Quorum).List(ctx, frs, client.InNamespace(env.Namespace)); err == nil && len(frs.Items) > len(before)+1 {
						return
					}
				}
			}()
			r = z.cli(wctx, "failback", group, "--wait")
			assert.Equal(t, cli.ExitStillRunning, r.code)
			assert.Contains(t, r.stderr, "goes on")
			z.waitRunning(env.Primary)
		}},

		{"an unplanned failover needs the group's name", func(t *testing.T) {
			r := z.cli(ctx, "failover", group, "--to", env.Primary, "--unplanned")
			assert.Equal(t, cli.ExitUsage, r.code)
			assert.Contains(t, r.stderr, "--confirm "+group)
		}},

		{"protect --wait protects a VM, unprotect removes it", func(t *testing.T) {
			vm := env.AppNS + "/" + protectVM
			z.limitedZone(t, "second")
			r := z.cli(ctx, "protect", vm, "--group", "web")
			assert.Equal(t, cli.ExitUsage, r.code, "two zones: --zone is needed")
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
		}},

		{"runbooks", z.runbooks},
	})
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

// limitedZone adds a zone, name, whose kubeconfig Secret's identity, a
// ServiceAccount with a token from the TokenRequest API, may only read
// ProtectionGroups on the primary cluster. All of it goes when t ends, the
// zone before the step after it validates every zone.
func (z *zone) limitedZone(t *testing.T, name string) {
	ctx := context.Background()
	c := z.Client(env.Primary)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"siterecovery.trilio.io"}, Resources: []string{"protectiongroups"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}}
	z.createUntilEnd(t, env.Primary, sa, role, binding)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	require.NoError(t, c.SubResource("token").Create(ctx, sa, tr))
	kc, err := clientcmd.Load(z.Clusters[env.Primary].Kubeconfig)
	require.NoError(t, err)
	for _, a := range kc.AuthInfos {
		*a = clientcmdapi.AuthInfo{Token: tr.Status.Token}
	}
	data, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	ref := srv1alpha1.SecretKeyReference{Name: name + "-kubeconfig"}
	z.createUntilEnd(t, env.Quorum, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: ref.Name},
		Data: map[string][]byte{srv1alpha1.KubeconfigSecretKey: data}})
	pz := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
			{Name: name + "-a", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: ref},
			{Name: name + "-b", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: ref}}}}
	z.createUntilEnd(t, env.Quorum, pz)
}

// viewer may read the DR namespace's siterecovery objects on the quorum
// cluster, but not its Secrets, until t ends.
func (z *zone) viewer(t *testing.T) {
	z.createUntilEnd(t, env.Quorum, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "viewer"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"siterecovery.trilio.io", "dr.siterecovery.trilio.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list"}},
		}}, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "viewer"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "viewer", APIGroup: "rbac.authorization.k8s.io"}}})
}

// createUntilEnd creates objs on a cluster and, when t ends, deletes them in
// reverse order and waits until they are gone.
func (z *zone) createUntilEnd(t *testing.T, cluster string, objs ...client.Object) {
	t.Helper()
	c := z.Client(cluster)
	for _, obj := range objs {
		require.NoError(t, c.Create(context.Background(), obj))
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for i := len(objs) - 1; i >= 0; i-- {
			require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, objs[i])))
		}
		for _, obj := range objs {
			env.Eventually(t, timeout, fmt.Sprintf("%T %s deleted", obj, obj.GetName()), func() error {
				err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
				if err == nil {
					return fmt.Errorf("still there, finalizers %v", obj.GetFinalizers())
				}
				return client.IgnoreNotFound(err)
			})
		}
	})
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
