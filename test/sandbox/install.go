package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/installed"
)

// Names docs/install.md gives the releases and the chart's namespace.
const (
	zoneRelease     = "siterecovery-zone"
	workloadRelease = "siterecovery"
	quorumRelease   = "quorum"
)

// drNamespaces are the sandbox's DR namespaces: dr-demo, and those of
// -volsync and -offloaded.
func (sb *sandbox) drNamespaces() []string {
	out := []string{drNamespace}
	if sb.vs != nil {
		out = append(out, vsNamespace)
	}
	if sb.of != nil {
		out = append(out, ofNamespace)
	}
	return out
}

// startVersionProxies fronts each API server for helm, kubectl and
// bootstrap-zone.sh (installed.VersionProxy), and gives the shell their admin
// kubeconfigs as Q, P and D, as docs/install.md names them.
func (sb *sandbox) startVersionProxies() error {
	kcs := map[string][]byte{}
	sb.proxies = map[string]*installed.VersionProxy{}
	for v, cluster := range map[string]string{"Q": "quorum", "P": primary, "D": dr} {
		p, err := installed.NewVersionProxy(cluster, sb.zone.Clusters[cluster].Config, func(string, ...any) {})
		if err != nil {
			return err
		}
		sb.proxies[cluster], kcs[v] = p, p.Kubeconfig
	}
	dir := filepath.Join(sb.o.workDir, "install")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var err error
	sb.shell, err = installed.NewShell(dir, kcs)
	return err
}

// sh runs one step of the install and logs its commands and output to
// <work dir>/logs/install.log.
func (sb *sandbox) sh(step, script string) error {
	out, err := sb.shell.Run(script)
	f, ferr := os.OpenFile(filepath.Join(sb.logDir(), "install.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if ferr == nil {
		fmt.Fprintf(f, "# %s\n$ %s%s\n", step, script, out)
		_ = f.Close()
	}
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", step, err, out)
	}
	return nil
}

// installCharts runs docs/install.md steps 2 to 4 with the sandbox's names:
// the protectionzone chart on the quorum cluster, the workload chart on each
// workload cluster (its namespace labelled privileged for the agents; every
// DR namespace of the sandbox with its application namespace; the nodes'
// network), and one quorum-control-plane release per DR namespace.
func (sb *sandbox) installCharts() error {
	if err := sb.sh("step 2: the protectionzone chart", `helm --kubeconfig "$Q" install `+zoneRelease+` charts/protectionzone \
  --namespace siterecovery-system --create-namespace`); err != nil {
		return err
	}
	// The worked example asks pg-sync to copy a Secret (docs/recovery-plans.md,
	// companion objects), which needs quorumAccess.companionSecrets.
	sets := []string{"--set 'quorumAccess.drNamespaces={" + strings.Join(sb.drNamespaces(), ",") + "}'", "--set quorumAccess.companionSecrets=true"}
	for _, ns := range sb.drNamespaces() {
		sets = append(sets, fmt.Sprintf("--set 'quorumAccess.applicationNamespaces.%s={%s}'", ns, protectableNamespace(ns)))
	}
	appNamespaces := ""
	if sb.o.volsync {
		// pg-controller reads and writes the VolSync key Secrets only in the
		// namespaces this value lists (docs/volsync.md), whose Roles the chart
		// creates there: the namespaces must exist first.
		sets = append(sets, fmt.Sprintf("--set 'volsync.applicationNamespaces={%s}'", vsAppNS))
		appNamespaces = fmt.Sprintf(`  kubectl --kubeconfig "$K" create namespace %s --dry-run=client -o yaml |
    kubectl --kubeconfig "$K" apply -f -
`, vsAppNS)
	}
	if err := sb.sh("step 3: the workload chart", `for K in "$P" "$D"; do
  kubectl --kubeconfig "$K" create namespace siterecovery-system --dry-run=client -o yaml |
    kubectl --kubeconfig "$K" apply -f -
  kubectl --kubeconfig "$K" label --overwrite namespace siterecovery-system \
    pod-security.kubernetes.io/enforce=privileged \
    pod-security.kubernetes.io/audit=privileged \
    pod-security.kubernetes.io/warn=privileged
`+appNamespaces+`  helm --kubeconfig "$K" install `+workloadRelease+` charts/workload-control-plane \
    --namespace siterecovery-system `+strings.Join(sets, " ")+` \
    --set 'drbdNodeAgent.replicationNetworks={10.0.0.0/16}'
done`); err != nil {
		return err
	}
	for _, ns := range sb.drNamespaces() {
		if err := sb.sh("step 4: the quorum chart of "+ns, fmt.Sprintf(`helm --kubeconfig "$Q" install %s charts/quorum-control-plane \
  --namespace %s --create-namespace \
  --set 'protection.allowedNamespaces={%s}'`, quorumRelease, ns, protectableNamespace(ns))); err != nil {
			return err
		}
	}
	return nil
}

// connectZone is step 5 for a DR namespace: bootstrap-zone.sh mints the
// quorum identity's tokens and stores kubeconfigs whose server is the link
// (sb.links) to each workload cluster's API server, which a partition cuts,
// then applies the zone.
func (sb *sandbox) connectZone(spec drNamespaceSpec) error {
	return sb.sh("step 5: connect zone "+spec.zone, fmt.Sprintf(`scripts/bootstrap-zone.sh --quorum-kubeconfig "$Q" --dr-namespace %s --zone %s \
  --cluster %s=Primary:"$P" --cluster %s=DR:"$D" \
  --server %s=https://%s --server %s=https://%s \
  --backend %s --storage-mapping %s=%s --client-timeout-seconds 3`,
		spec.namespace, spec.zone, primary, dr, primary, sb.links[primary].Addr(), dr, sb.links[dr].Addr(),
		spec.backend, spec.storageClass, spec.storageClass))
}

// startInstalled runs the charts' pods as processes (installed.Host), each
// with the args of its container and a token of its own ServiceAccount:
// the ProtectionZone webhook, then, once every zone is connected, each DR
// namespace's quorum-manager, and each workload cluster's pg-controller and
// node agents.
func (sb *sandbox) startInstalled(ctx context.Context, zones []drNamespaceSpec) error {
	q := sb.zone.Clusters["quorum"]
	if err := sb.startPod(ctx, q, zoneRelease, installed.Pod{Name: "zone-webhook", Bin: "quorum-manager",
		Kind: "Deployment", Namespace: zoneWebhookNamespace, Workload: "siterecovery-zone-webhook"}); err != nil {
		return err
	}
	for _, z := range zones {
		if err := sb.connectZone(z); err != nil {
			return err
		}
		if err := sb.describeZone(ctx, z); err != nil {
			return err
		}
	}
	for _, ns := range sb.drNamespaces() {
		p := installed.Pod{Name: quorumProcess(ns), Bin: "quorum-manager", Kind: "Deployment", Namespace: ns,
			Workload: "quorum-manager-" + ns, Set: map[string]string{},
			// Faster than the chart's default: a partition shows within seconds.
			Extra: []string{"--cluster-probe-interval=2s"}}
		if addr := sb.metrics[ns]; addr != "" {
			p.Set["--metrics-bind-address"] = addr
		}
		if err := sb.startPod(ctx, q, quorumRelease, p); err != nil {
			return err
		}
	}
	for _, cluster := range []string{primary, dr} {
		c := sb.zone.Clusters[cluster]
		if err := sb.startPod(ctx, c, workloadRelease, installed.Pod{Name: "pg-controller-" + cluster, Bin: "pg-controller",
			Kind: "Deployment", Namespace: zoneWebhookNamespace, Workload: "pg-controller"}); err != nil {
			return err
		}
		for _, n := range nodes[cluster] {
			if err := sb.startPod(ctx, c, "", installed.Pod{Name: "drbd-node-agent-" + n.name, Bin: "drbd-node-agent",
				Kind: "DaemonSet", Namespace: zoneWebhookNamespace, Workload: "drbd-node-agent",
				Fields: map[string]string{"spec.nodeName": n.name, "status.hostIP": n.address},
				// The host folders the DaemonSet mounts, and the image's drbd-utils.
				Set: map[string]string{"--resource-dir": filepath.Join(sb.o.workDir, "nodes", n.name, "drbd.d"), "--kubelet-dir": sb.kubeletDir(n),
					"--drbdadm": filepath.Join(sb.o.binDir, "sim/drbdadm"), "--drbdsetup": filepath.Join(sb.o.binDir, "sim/drbdsetup")},
				Env: []string{"DRBDSIM_NODE=" + n.name, "__DRBD_NODE__=" + n.name, "DRBDSIM_STATE_DIR=" + sb.state}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// startPod starts a chart's pod; with a release, it first points that
// release's webhooks at the pod's process.
func (sb *sandbox) startPod(ctx context.Context, c *harness.Cluster, release string, p installed.Pod) error {
	p.Cluster = c
	if release != "" {
		w, err := installed.ServeWebhooks(ctx, c.Client, release, p.Namespace, filepath.Join(sb.o.workDir, "certs", p.Name))
		if err != nil {
			return fmt.Errorf("the webhooks of %s: %w", p.Name, err)
		}
		if p.Set == nil {
			p.Set = map[string]string{}
		}
		for k, v := range w.Flags() {
			p.Set[k] = v
		}
	}
	proc, err := sb.host.Start(ctx, p)
	if proc != nil {
		sb.procs = append(sb.procs, proc)
	}
	if err != nil {
		return fmt.Errorf("%w (did `make build sim-binaries` run?)", err)
	}
	return nil
}

func quorumProcess(ns string) string {
	return map[string]string{drNamespace: "quorum-manager", vsNamespace: "quorum-manager-volsync", ofNamespace: "quorum-manager-offloaded"}[ns]
}

// simulatorConfig is the identity of the simulators on a workload cluster:
// they stand for Kubernetes' own controllers (the volume binder, the
// kubelet), KubeVirt's and the storage's, so they run as a ServiceAccount of
// kube-system, which the workload chart's webhooks let through
// (webhooks.allowedGroups), with every right.
func (sb *sandbox) simulatorConfig(ctx context.Context, cluster string) (*rest.Config, error) {
	c := sb.zone.Clusters[cluster]
	const name = "sandbox-simulators"
	if err := c.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if err := c.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: name}},
	}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	token, err := harness.ServiceAccountToken(ctx, c.Client, "kube-system", name, tokenTTL)
	if err != nil {
		return nil, err
	}
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = token
	return cfg, nil
}

// tokenTTL is how long the tokens of the sandbox's processes last.
const tokenTTL = 7 * 24 * time.Hour
