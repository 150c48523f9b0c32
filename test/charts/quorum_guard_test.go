package charts

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// holderPod has the shape of quorum-manager's replica holder: no token,
// non-root, no privilege, block volumes from PVCs.
func holderPod(namespace string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "holder"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext:              &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65535))},
			Volumes: []corev1.Volume{{Name: "vol-0", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}}},
			Containers: []corev1.Container{{Name: "holder", Image: "registry.k8s.io/pause:3.10",
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				VolumeDevices: []corev1.VolumeDevice{{Name: "vol-0", DevicePath: "/dev/siterecovery/vol-0"}}}},
		},
	}
}

// probeJob is a test failover's probe Job of spec in namespace.
func probeJob(namespace string, spec corev1.PodSpec) *batchv1.Job {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "probe"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	job.Spec.Template.Spec.Volumes, job.Spec.Template.Spec.Containers[0].VolumeDevices = nil, nil
	return job
}

// probeService is the headless Service a test failover's probe resolves.
func probeService(namespace string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "probe"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"vm": "vm-1"},
			Ports: []corev1.ServicePort{{Name: "probe", Port: 80, Protocol: corev1.ProtocolTCP}}}}
}

func localPV(path string, mode corev1.PersistentVolumeMode) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "frontend"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:                    ptr.To(mode),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}},
			}}}},
		},
	}
}

// TestQuorumGuardNarrowsTheClusterWideRights installs the workload chart's
// quorum identity with its admission guard in a real API server and acts as
// that identity: what quorum-manager makes with its cluster-wide rights is
// let through, and what a stolen quorum kubeconfig could do beyond it (a
// privileged pod, a host path, a relabelled node, a deleted application
// namespace, a write in kube-system or another DR namespace) is refused with
// a message that says the rule.
func TestQuorumGuardNarrowsTheClusterWideRights(t *testing.T) {
	g := startGuarded(t)
	admin, quorum, ctx := g.admin, g.quorum, t.Context()
	dry := client.DryRunAll

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "a"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: srv1alpha1.LostQuorumTaintKey, Effect: corev1.TaintEffectNoSchedule}}}}
	require.NoError(t, admin.Create(ctx, node))
	testNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps-test-1", Labels: map[string]string{
		"siterecovery.trilio.io/test-failover-uid": "u1", srv1alpha1.DRNamespaceLabel: "dr-production"}}}
	require.NoError(t, admin.Create(ctx, testNS))
	privileged := privilegedPod()

	t.Run("allowed", func(t *testing.T) {
		require.NoError(t, quorum.Create(ctx, holderPod("apps"), dry), "a replica holder")
		require.NoError(t, quorum.Create(ctx, probeJob(testNS.Name, holderPod("apps").Spec), dry), "a probe Job in a test failover's namespace")
		require.NoError(t, quorum.Create(ctx, probeService(testNS.Name), dry), "the probe's headless Service")
		require.NoError(t, quorum.Create(ctx, localPV("/dev/drbd1001", corev1.PersistentVolumeBlock), dry), "a frontend PV on a DRBD device")
		require.NoError(t, quorum.Delete(ctx, testNS.DeepCopy(), dry), "a test failover's isolated namespace")
		require.NoError(t, patchNode(t, admin, quorum, func(n *corev1.Node) { n.Spec.Taints = nil }), "removing the lost-quorum taint")
		require.NoError(t, quorum.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dr-production", Name: "s"}}, dry), "its own DR namespace")
	})

	shape := "quorum-manager creates only pods and Jobs shaped as its replica holders and probes"
	t.Run("refused", func(t *testing.T) {
		refused(t, quorum.Create(ctx, privileged.DeepCopy(), dry), shape)
		hostPath := holderPod("apps")
		hostPath.Spec.Volumes = append(hostPath.Spec.Volumes, corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		refused(t, quorum.Create(ctx, hostPath, dry), shape)
		token := holderPod("apps")
		token.Spec.AutomountServiceAccountToken = nil
		refused(t, quorum.Create(ctx, token, dry), shape)
		hostNet := holderPod("apps")
		hostNet.Spec.HostNetwork = true
		refused(t, quorum.Create(ctx, hostNet, dry), shape)
		root := holderPod("apps")
		root.Spec.SecurityContext.RunAsNonRoot = nil
		refused(t, quorum.Create(ctx, root, dry), shape)
		caps := holderPod("apps")
		caps.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		refused(t, quorum.Create(ctx, caps, dry), shape)
		refused(t, quorum.Create(ctx, probeJob(testNS.Name, hostNet.Spec), dry), shape)
		// Container-level settings override the pod's: each is checked.
		rootContainer := holderPod("apps")
		rootContainer.Spec.Containers[0].SecurityContext.RunAsUser = ptr.To(int64(0))
		refused(t, quorum.Create(ctx, rootContainer, dry), shape)
		rootAllowed := holderPod("apps")
		rootAllowed.Spec.Containers[0].SecurityContext.RunAsNonRoot = ptr.To(false)
		refused(t, quorum.Create(ctx, rootAllowed, dry), shape)
		rootPod := holderPod("apps")
		rootPod.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
		refused(t, quorum.Create(ctx, rootPod, dry), shape)
		hostPort := holderPod("apps")
		hostPort.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 7000, HostPort: 7000}}
		refused(t, quorum.Create(ctx, hostPort, dry), shape)
		tolerates := holderPod("apps")
		tolerates.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		refused(t, quorum.Create(ctx, tolerates, dry), shape)
		refused(t, quorum.Create(ctx, probeJob("apps", holderPod("apps").Spec), dry), "creates Services and Jobs only in the isolated namespace of a test failover")

		serviceRule := "Services only headless (type ClusterIP, clusterIP None) without external IPs"
		for name, change := range map[string]func(*corev1.Service){
			"LoadBalancer": func(s *corev1.Service) { s.Spec.Type, s.Spec.ClusterIP = corev1.ServiceTypeLoadBalancer, "" },
			"NodePort":     func(s *corev1.Service) { s.Spec.Type, s.Spec.ClusterIP = corev1.ServiceTypeNodePort, "" },
			"externalIPs":  func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.10"} },
			"cluster IP":   func(s *corev1.Service) { s.Spec.ClusterIP = "" },
		} {
			svc := probeService(testNS.Name)
			change(svc)
			refused(t, quorum.Create(ctx, svc, dry), serviceRule)
			t.Logf("a %s Service is refused", name)
		}
		refused(t, quorum.Create(ctx, probeService("apps"), dry), serviceRule)

		refused(t, quorum.Create(ctx, localPV("/", corev1.PersistentVolumeBlock), dry), "only block PersistentVolumes of a local DRBD device")
		refused(t, quorum.Create(ctx, localPV("/dev/drbd7", corev1.PersistentVolumeFilesystem), dry), "only block PersistentVolumes of a local DRBD device")

		refused(t, quorum.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, dry), "namespace apps has no siterecovery.trilio.io/test-failover-uid label")

		nodeRule := "changes a Node only by removing its drbd.linbit.com/lost-quorum:NoSchedule taint"
		refused(t, patchNode(t, admin, quorum, func(n *corev1.Node) { n.Labels["zone"] = "b" }), nodeRule)
		refused(t, patchNode(t, admin, quorum, func(n *corev1.Node) { n.Spec.Unschedulable = true }), nodeRule)
		refused(t, patchNode(t, admin, quorum, func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "evict", Effect: corev1.TaintEffectNoExecute})
		}), nodeRule)
		// The lost-quorum key with NoExecute would evict every pod of the node.
		refused(t, patchNode(t, admin, quorum, func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: srv1alpha1.LostQuorumTaintKey, Effect: corev1.TaintEffectNoExecute})
		}), nodeRule)
		refused(t, patchNode(t, admin, quorum, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: srv1alpha1.LostQuorumTaintKey, Effect: corev1.TaintEffectNoExecute}}
		}), nodeRule)
		refused(t, patchNode(t, admin, quorum, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: srv1alpha1.LostQuorumTaintKey, Value: "again", Effect: corev1.TaintEffectNoSchedule}}
		}), nodeRule)

		for _, ns := range []string{"kube-system", "siterecovery-system"} {
			refused(t, quorum.Create(ctx, holderPod(ns), dry), "quorum-manager writes nothing in namespace "+ns)
		}
		refused(t, quorum.Create(ctx, holderPod("dr-staging"), dry), "namespace dr-staging is another DR namespace")
	})

	t.Run("test failover shapes", func(t *testing.T) { checkTestFailoverShapes(t, g, testNS.Name) })

	t.Run("others are not judged", func(t *testing.T) {
		// The guard is the quorum identity's only: an administrator's
		// privileged pod is none of its business.
		require.NoError(t, admin.Create(ctx, privileged.DeepCopy(), dry))
	})
}

// patchNode sends change of node-1 as quorum-manager does: a dry-run merge
// patch with the read's resourceVersion.
func patchNode(t *testing.T, admin, as client.Client, change func(*corev1.Node)) error {
	t.Helper()
	n := &corev1.Node{}
	require.NoError(t, admin.Get(t.Context(), client.ObjectKey{Name: "node-1"}, n))
	before := n.DeepCopy()
	change(n)
	return as.Patch(t.Context(), n, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.DryRunAll)
}

// guarded is a cluster with the workload chart's quorum identities (DR
// namespaces dr-production, which protects the application namespace apps,
// and dr-staging, which protects none) and their guard installed, and a
// client acting as dr-production's quorum-manager.
type guarded struct {
	admin, quorum client.Client
	// config is the cluster's admin configuration, to act as another identity.
	config *rest.Config
}

// startGuarded installs the workload chart's quorum access in a real API
// server and waits until the API server enforces its guard. The application
// namespace "apps" allows privileged pods (PodSecurity's privileged level, as
// some clusters have): the guard must refuse them on its own.
func startGuarded(t *testing.T) guarded {
	t.Helper()
	return startGuardedWith(t, nil)
}

// startGuardedWith is startGuarded with more quorumAccess values.
func startGuardedWith(t *testing.T, quorumAccess map[string]any) guarded {
	t.Helper()
	s := scheme.New()
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: s}, harness.Primary)
	cluster := zone.Clusters[harness.Primary]
	admin := cluster.Client
	ctx := t.Context()

	qa := map[string]any{"drNamespaces": []any{"dr-production", "dr-staging"},
		"applicationNamespaces": map[string]any{"dr-production": []any{"apps"}}}
	for k, v := range quorumAccess {
		qa[k] = v
	}
	values := map[string]any{"quorumAccess": qa}
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "siterecovery-system"}}))
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}))
	objs := renderValues(t, "workload-control-plane", "siterecovery-system", values)
	require.NotNil(t, find(objs, "ValidatingAdmissionPolicy", "", "siterecovery-quorum-access-guard"))
	for _, obj := range objs {
		if obj.GetKind() == "Namespace" || obj.GetLabels()["app.kubernetes.io/name"] == "quorum-access" {
			require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	cfg := rest.CopyConfig(cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:dr-production:quorum-manager",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:dr-production", "system:authenticated"}}
	quorum, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	// The API server picks a new policy up within a moment: wait until the
	// guard refuses a privileged pod, then check every case.
	require.Eventually(t, func() bool {
		err := quorum.Create(ctx, privilegedPod(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "siterecovery-quorum-access-guard")
	}, 30*time.Second, 100*time.Millisecond, "the guard never refused a privileged pod")
	return guarded{admin: admin, quorum: quorum, config: cluster.Config}
}

func privilegedPod() *corev1.Pod {
	p := holderPod("apps")
	p.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
	p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
	return p
}

// refused fails unless err is the guard's refusal and names the rule.
func refused(t *testing.T, err error, says string) {
	t.Helper()
	require.Error(t, err)
	require.Contains(t, err.Error(), "siterecovery-quorum-access-guard")
	require.Contains(t, err.Error(), says)
}
