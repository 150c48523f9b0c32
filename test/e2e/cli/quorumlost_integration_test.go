package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli"
	"github.com/siterecovery/siterecovery/test/env"
)

// quorumClusterLost follows scripts/quorum-cluster-lost.md: the quorum
// cluster's DR namespace is wiped with quorum-manager down, rebuilt from a
// collect-diagnostics.sh bundle and the workload clusters' group copies, and
// a new quorum-manager resumes protection without moving any VM.
func (z *zone) quorumClusterLost(t *testing.T) {
	ctx := context.Background()
	z.waitIdle()
	r := z.script(t, "collect-diagnostics.sh", "", "-d", t.TempDir(), "-s", "1h")
	require.Equal(t, 0, r.code)
	bundle := readBundle(t, strings.TrimSpace(r.stdout))
	running := z.instances(ctx, env.Primary)
	for _, vm := range vms {
		require.Contains(t, running, vm)
	}
	kubeconfigs := z.kubeconfigSecrets(ctx)

	// The quorum cluster is lost: quorum-manager and every object of the DR namespace.
	z.QuorumManager.Stop(t)
	z.wipeQuorum(ctx)

	// Step 2: the kubeconfig Secrets, under the names the zone uses.
	for _, s := range kubeconfigs {
		z.create(env.Quorum, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: s.Name}, Data: s.Data})
	}
	// Step 3: the ProtectionZone from the bundle, without status and identity.
	zones := &srv1alpha1.ProtectionZoneList{}
	require.NoError(t, yaml.Unmarshal([]byte(bundle["quorum/protectionzones.yaml"]), zones))
	for _, pz := range zones.Items {
		if pz.Name != env.ZoneName {
			continue // only the production zone has clusters behind it
		}
		z.create(env.Quorum, &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: pz.Namespace, Name: pz.Name, Labels: pz.Labels}, Spec: pz.Spec})
	}
	z.StartQuorumManager()
	z.waitReachable()

	// Step 4: each group's active cluster, with the runbook's command.
	active := map[string]string{}
	for _, c := range []string{env.Primary, env.DR} {
		for _, line := range strings.Split(strings.TrimSpace(z.kubectl(t, c, "-n", env.Namespace, "get", "protectiongroups",
			"-o", "custom-columns=NAME:.metadata.name,DESIRED:.spec.desiredState,CURRENT:.status.currentState", "--no-headers")), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[1] == string(srv1alpha1.StateRunning) {
				require.NotContains(t, active, f[0], "group %s runs on two clusters", f[0])
				active[f[0]] = c
			}
		}
	}
	require.Equal(t, env.Primary, active[group])

	// Step 5: each ProtectionGroup, from its active cluster's copy.
	for name, cluster := range active {
		cp := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, z.Client(cluster).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, cp))
		z.create(env.Quorum, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
			Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: cp.Spec.VirtualMachines, ActiveCluster: cluster,
				ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}, Replication: cp.Spec.Replication}})
	}

	// Step 7: protection resumed, and no VM moved or restarted.
	env.Eventually(t, timeout, "group synced and replication healthy", func() error {
		pg := &srv1alpha1.ProtectionGroup{}
		if err := z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, pg); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(pg.Status.Conditions, srv1alpha1.ConditionSynced) {
			return fmt.Errorf("not synced: %+v", pg.Status.Conditions)
		}
		rgs := &srv1alpha1.ReplicationGroupStatus{}
		if err := z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, rgs); err != nil {
			return err
		}
		if rgs.Status.Health != srv1alpha1.HealthHealthy || !rgs.Status.FailoverReady {
			return fmt.Errorf("health %s, failoverReady %v", rgs.Status.Health, rgs.Status.FailoverReady)
		}
		return nil
	})
	r = z.cli(ctx, "validate")
	require.Equal(t, cli.ExitOK, r.code, r.stdout)
	assert.Contains(t, r.stdout, "0 problems")
	r = z.cli(ctx, "status", group, "-o", "json")
	require.Equal(t, cli.ExitOK, r.code, r.stderr)
	var rep cli.StatusReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Namespaces[0].Groups, 1)
	assert.Equal(t, env.Primary, rep.Namespaces[0].Groups[0].ActiveCluster)
	assert.True(t, rep.Namespaces[0].Groups[0].RPOMet)
	assert.Equal(t, running, z.instances(ctx, env.Primary), "the same VM instances run on the primary: none restarted")
	assert.Empty(t, z.instances(ctx, env.DR), "no VM started on the DR cluster")
	for _, vm := range vms {
		assert.Equal(t, srv1alpha1.RolePrimary, z.DRBDResource(env.Primary, vm).Spec.Role, "%s's DRBD primary stays on the primary", vm)
	}
}

// instances are the running VMIs of the app namespace on a cluster, by name.
func (z *zone) instances(ctx context.Context, cluster string) map[string]types.UID {
	list := &kubevirtv1.VirtualMachineInstanceList{}
	require.NoError(z.t, z.Client(cluster).List(ctx, list, client.InNamespace(env.AppNS)))
	out := map[string]types.UID{}
	for _, vmi := range list.Items {
		out[vmi.Name] = vmi.UID
	}
	return out
}

// kubeconfigSecrets are the production zone's kubeconfig Secrets: what an
// operator keeps (or issues again) outside the quorum cluster.
func (z *zone) kubeconfigSecrets(ctx context.Context) []corev1.Secret {
	pz := &srv1alpha1.ProtectionZone{}
	require.NoError(z.t, z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.ZoneName}, pz))
	var out []corev1.Secret
	seen := map[string]bool{}
	for _, c := range pz.Spec.Clusters {
		if seen[c.KubeconfigSecretRef.Name] {
			continue
		}
		seen[c.KubeconfigSecretRef.Name] = true
		s := corev1.Secret{}
		require.NoError(z.t, z.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: c.KubeconfigSecretRef.Name}, &s))
		out = append(out, s)
	}
	return out
}

// wipeQuorum deletes every object of the DR namespace on the quorum cluster,
// finalizers included: with quorum-manager gone nothing would remove them.
func (z *zone) wipeQuorum(ctx context.Context) {
	c := z.Client(env.Quorum)
	for _, list := range []client.ObjectList{&srv1alpha1.FailoverRequestList{}, &srv1alpha1.TestFailoverList{}, &srv1alpha1.ProtectionRequestList{},
		&srv1alpha1.RPOEventList{}, &srv1alpha1.ReplicationGroupStatusList{}, &srv1alpha1.ProtectionGroupList{}, &srv1alpha1.ProtectionZoneList{},
		&corev1.SecretList{}, &coordinationv1.LeaseList{}} {
		require.NoError(z.t, c.List(ctx, list, client.InNamespace(env.Namespace)))
		items, err := meta.ExtractList(list)
		require.NoError(z.t, err)
		for _, item := range items {
			obj := item.(client.Object)
			if len(obj.GetFinalizers()) > 0 {
				require.NoError(z.t, c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))
			}
			require.NoError(z.t, client.IgnoreNotFound(c.Delete(ctx, obj)))
		}
	}
	env.Eventually(z.t, timeout, "DR namespace empty", func() error {
		pgs := &srv1alpha1.ProtectionGroupList{}
		if err := c.List(ctx, pgs, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		if len(pgs.Items) > 0 {
			return fmt.Errorf("groups left: %d", len(pgs.Items))
		}
		return nil
	})
}

// kubectl runs kubectl against a workload cluster, as the runbook's commands do.
func (z *zone) kubectl(t *testing.T, cluster string, args ...string) string {
	kc := filepath.Join(t.TempDir(), cluster+".kubeconfig")
	require.NoError(t, os.WriteFile(kc, z.Clusters[cluster].Kubeconfig, 0o600))
	bin := filepath.Join(strings.Split(z.path, ":")[0], "kubectl")
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kc}, args...)...)
	cmd.Env = []string{"PATH=" + z.path, "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("kubectl --context %s %v\n%s", cluster, args, out)
	return string(out)
}
