package installdoc

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/chartrender"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/installed"
)

// What docs/install.md names.
const (
	drNamespace     = "dr-production"
	zoneName        = "production"
	systemNamespace = "siterecovery-system"
	zoneRelease     = "siterecovery-zone"
	quorumRelease   = "quorum"
	quorumSA        = "quorum-manager-" + drNamespace
)

// TestInstallDoc runs steps 2 to 6 of docs/install.md on empty quorum,
// primary and DR API servers: the charts' objects (CRDs included) come from
// helm, the quorum identity on the workload clusters from the workload chart,
// the kubeconfig Secrets and the ProtectionZone from scripts/bootstrap-zone.sh.
// The ProtectionZone webhook, quorum-manager, pg-controller and the agents then
// run as processes of their binaries (test/installed), with their containers' args
// and the tokens of the service accounts the charts created, serving the
// webhooks helm installed, and quorum-manager reaches both workload clusters
// with the stored kubeconfigs only. Step 6's commands validate the zone and protect apps/web.
func TestInstallDoc(t *testing.T) {
	h := newHost(t)
	s := scheme.New()
	// Whole control planes, as the clusters an operator installs into:
	// kube-controller-manager, kube-scheduler placing the pods the product
	// creates (replica holders) and the VMs' launcher pods, kwok's nodes, and
	// a kubeadm cluster's admission plugins with PodSecurity.
	z := harness.Start(t, harness.Options{CRDDirectoryPaths: []string{}, Scheme: s, ControlPlane: true, Nodes: env.NodeSpecs}, "quorum", "primary", "dr")
	e := &env.Env{Zone: z, Scheme: s, Clusters: map[string]*harness.Cluster{
		env.Quorum: z.Clusters["quorum"], env.Primary: z.Clusters["primary"], env.DR: z.Clusters["dr"]}}
	h.use(t, e)
	ctx := t.Context()
	root := harness.RepoRoot()
	page, err := steps(filepath.Join(root, "docs", "install.md"))
	require.NoError(t, err)
	for _, n := range []string{"2", "3", "4", "5"} {
		require.NotEmpty(t, page[n], "docs/install.md has no command block in step %s", n)
	}
	sh := shell(t, e)
	// 0: what the page asks of the workload clusters before step 2.
	for _, cluster := range []string{env.Primary, env.DR} {
		workloadPrerequisites(t, e, cluster)
	}

	// 2-4: the charts.
	for _, n := range []string{"2", "3", "4"} {
		sh.run(t, n, page[n])
	}
	for _, cluster := range []string{env.Primary, env.DR} {
		c := e.Client(cluster)
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: drNamespace}, &corev1.Namespace{}), "%s: step 3 creates the DR namespace", cluster)
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: "quorum-manager"}, &corev1.ServiceAccount{}),
			"%s: step 3 creates quorum-manager's ServiceAccount", cluster)
		// The workload chart's CRDs are served (helm installed them).
		require.NoError(t, c.List(ctx, &srv1alpha1.DRBDResourceList{}, client.InNamespace(drNamespace)), cluster)
	}
	q := e.Client(env.Quorum)
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: quorumSA}, &corev1.ServiceAccount{}), "step 4 creates quorum-manager's ServiceAccount")
	requireNoAdminBinding(t, e)

	// The zone webhook of step 2 serves before step 5 applies the zone.
	startZoneWebhook(t, e, h)

	// 5: connect the zone, twice: a rerun rotates the tokens.
	out := sh.run(t, "5", page["5"])
	first := map[string]string{}
	for _, name := range []string{"primary", "dr"} {
		first[name] = storedKubeconfig(t, q, name)
	}
	out += sh.run(t, "5 (rerun, rotation)", page["5"])
	zone := &srv1alpha1.ProtectionZone{}
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: zoneName}, zone))
	require.Len(t, zone.Spec.Clusters, 2)
	for _, name := range []string{"primary", "dr"} {
		kc := storedKubeconfig(t, q, name)
		assert.NotEqual(t, first[name], kc, "a rerun rotates the token of %s", name)
		assert.Contains(t, kc, "certificate-authority-data: ")
		assert.NotContains(t, kc, "client-certificate")
		assert.NotContains(t, kc, "client-key")
		i := strings.Index(kc, "token: ")
		require.Positive(t, i, "%s: the kubeconfig holds a token", name)
		assert.NotContains(t, out, strings.TrimSpace(kc[i+len("token: "):])[:20], "the script printed a token")
	}

	// quorum-manager, as the quorum chart's service account, serves the
	// quorum release's webhooks and reaches both workload clusters through
	// the stored kubeconfigs.
	h.start(t, pod{cluster: env.Quorum, Pod: installed.Pod{Name: "quorum-manager", Bin: "quorum-manager",
		Kind: "Deployment", Namespace: drNamespace, Workload: quorumSA, Set: serveWebhooks(t, e, env.Quorum, quorumRelease, drNamespace)}})
	env.Eventually(t, 2*time.Minute, "the zone Ready, both clusters reachable with the minted kubeconfigs", func() error {
		zone := &srv1alpha1.ProtectionZone{}
		if err := q.Get(ctx, client.ObjectKey{Namespace: drNamespace, Name: zoneName}, zone); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(zone.Status.Conditions, srv1alpha1.ConditionReady) {
			return fmt.Errorf("zone conditions %+v, clusters %+v", zone.Status.Conditions, zone.Status.Clusters)
		}
		for _, cs := range zone.Status.Clusters {
			if !meta.IsStatusConditionTrue(cs.Conditions, srv1alpha1.ConditionReachable) {
				return fmt.Errorf("cluster %s: %+v", cs.Name, cs.Conditions)
			}
		}
		return nil
	})

	step6(t, e, h, sh, page["6"])
	var stored []string
	for _, name := range []string{"primary", "dr"} {
		kc := storedKubeconfig(t, q, name)
		stored = append(stored, strings.TrimSpace(kc[strings.Index(kc, "token: ")+len("token: "):]))
	}
	h.requireRunning(t, stored)
}

// runner runs a step's code blocks as a user's shell would
// (installed.Shell): Q, P and D are the admin kubeconfigs, reaching each API
// server through an installed.VersionProxy, helm and kubectl are on PATH,
// the working directory is the repository.
type runner struct{ *installed.Shell }

func shell(t *testing.T, e *env.Env) *runner {
	t.Helper()
	kcs := map[string][]byte{}
	for v, cluster := range map[string]string{"Q": env.Quorum, "P": env.Primary, "D": env.DR} {
		p, err := installed.NewVersionProxy(cluster, e.Clusters[cluster].Config, t.Logf)
		require.NoError(t, err)
		t.Cleanup(p.Close)
		kcs[v] = p.Kubeconfig
	}
	sh, err := installed.NewShell(t.TempDir(), kcs)
	require.NoError(t, err)
	return &runner{sh}
}

// run runs the blocks of a step and returns their output.
func (r *runner) run(t *testing.T, step string, blocks []string) string {
	t.Helper()
	var all strings.Builder
	for _, b := range blocks {
		out, err := r.Run(b)
		t.Logf("step %s:\n$ %s%s", step, b, out)
		require.NoError(t, err, "step %s of docs/install.md", step)
		all.WriteString(out)
	}
	return all.String()
}

// startZoneWebhook runs the protectionzone chart's webhook pod (quorum-manager
// --zone-webhook), serving the configuration helm installed, and waits until
// it answers.
func startZoneWebhook(t *testing.T, e *env.Env, h *host) {
	t.Helper()
	h.start(t, pod{cluster: env.Quorum, Pod: installed.Pod{Name: "zone-webhook", Bin: "quorum-manager",
		Kind: "Deployment", Namespace: systemNamespace, Workload: "siterecovery-zone-webhook",
		Set: serveWebhooks(t, e, env.Quorum, zoneRelease, systemNamespace)}})
	probe := chartrender.ZoneWebhookProbe(drNamespace)
	env.Eventually(t, time.Minute, "the ProtectionZone webhook serves", func() error {
		err := e.Client(env.Quorum).Create(context.Background(), probe.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "does not exist in namespace") {
			return nil
		}
		if err == nil {
			return errors.New("not yet: the probe was admitted")
		}
		return fmt.Errorf("not yet: %w", err)
	})
}

// requireNoAdminBinding checks that no chart bound an identity to cluster-admin.
func requireNoAdminBinding(t *testing.T, e *env.Env) {
	t.Helper()
	for name, c := range e.Clusters {
		bindings := &rbacv1.ClusterRoleBindingList{}
		require.NoError(t, c.Client.List(t.Context(), bindings))
		for _, b := range bindings.Items {
			if b.Annotations["meta.helm.sh/release-name"] != "" {
				assert.NotEqual(t, "cluster-admin", b.RoleRef.Name, "%s: %s binds cluster-admin", name, b.Name)
			}
		}
	}
}

// storedKubeconfig is the kubeconfig of a workload cluster's Secret on the quorum cluster.
func storedKubeconfig(t *testing.T, q client.Client, cluster string) string {
	t.Helper()
	sec := &corev1.Secret{}
	require.NoError(t, q.Get(t.Context(), client.ObjectKey{Namespace: drNamespace, Name: cluster + "-kubeconfig"}, sec))
	return string(sec.Data[srv1alpha1.KubeconfigSecretKey])
}
