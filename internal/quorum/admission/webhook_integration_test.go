package admission_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/admission"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

// Every rule of quorum-manager's webhooks, called by a real kube-apiserver
// through the configuration the quorum-control-plane chart renders: one allowed
// and one refused case per rule, with the message the user reads. Allowed cases
// are dry runs where the object would otherwise start a flow.
func TestQuorumWebhooks(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	e.InstallClusterRoles(t, env.Quorum, "protectionzone")
	o := e.InstallWebhooks(t, env.Quorum, "quorum-control-plane", env.WebhookRotation{})
	webhooks := startWebhooks(t, e, o)
	e.StartZoneWebhook(t)
	e.InstallConfirmationPolicy(t)
	admin := asUser(t, e, "")
	q := e.Client(env.Quorum)
	require.NoError(t, q.Create(ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: group},
		Spec:       srv1alpha1.ProtectionGroupSpec{ActiveCluster: env.Primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}},
	}))
	waitServing(t, admin)

	t.Run("FailoverRequest", func(t *testing.T) {
		bind(t, e, "olivia", "siterecovery-operator")
		bind(t, e, "dana", "siterecovery-disaster-operator")
		operator, disaster := asUser(t, e, "olivia"), asUser(t, e, "dana")
		dry := client.DryRunAll

		fr := failoverRequest("no-group", env.DR, srv1alpha1.FailoverPlanned)
		fr.Spec.ProtectionGroupRef.Name = "nope"
		denied(t, operator.Create(ctx, fr), `ProtectionGroup "nope" does not exist in namespace dr-production; its groups are: web`)
		denied(t, operator.Create(ctx, failoverRequest("mars", "mars", srv1alpha1.FailoverPlanned)),
			`targetCluster "mars" is not a cluster of zone production; valid targets for group web: dr-cluster`)
		denied(t, operator.Create(ctx, failoverRequest("here", env.Primary, srv1alpha1.FailoverPlanned)),
			"group web already runs on primary-cluster; a planned failover needs another target: dr-cluster")
		require.NoError(t, operator.Create(ctx, failoverRequest("planned", env.DR, srv1alpha1.FailoverPlanned), dry))

		// The README's planned failover applies verbatim once its group exists.
		require.NoError(t, q.Create(ctx, &srv1alpha1.ProtectionGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "production-pg"},
			Spec:       srv1alpha1.ProtectionGroupSpec{ActiveCluster: env.Primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}},
		}))
		require.NoError(t, operator.Create(ctx, readmeFailover(t), dry))

		// The protectionzone chart's admission policy: the API server itself
		// checks the confirmation and the disaster-operator right.
		unplanned := failoverRequest("unplanned", env.DR, srv1alpha1.FailoverUnplanned)
		refusedByPolicy(t, disaster.Create(ctx, unplanned.DeepCopy(), dry), `an unplanned failover may lose the writes not yet replicated and skips the safety checks of a planned one; confirm it by setting the annotation siterecovery.trilio.io/confirm: "web" on the request`)
		forced := failoverRequest("forced", env.DR, srv1alpha1.FailoverPlanned)
		forced.Spec.Force = true
		refusedByPolicy(t, disaster.Create(ctx, forced.DeepCopy(), dry), "a forced failover may lose the writes")
		forced.Annotations = map[string]string{srv1alpha1.ConfirmAnnotation: "another-group"}
		refusedByPolicy(t, disaster.Create(ctx, forced, dry), `confirm it by setting the annotation siterecovery.trilio.io/confirm: "web"`)
		unplanned.Annotations = map[string]string{srv1alpha1.ConfirmAnnotation: group}
		refusedByPolicy(t, operator.Create(ctx, unplanned.DeepCopy(), dry),
			`user "olivia" may not make an unplanned failover in dr-production: that needs the disaster-operator role (create on failoverrequests/disaster)`)
		require.NoError(t, disaster.Create(ctx, unplanned.DeepCopy(), dry))

		// A second unfinished request of the group is admitted with a warning
		// that names the first.
		first := failoverRequest("first", env.DR, srv1alpha1.FailoverPlanned)
		require.NoError(t, operator.Create(ctx, first))
		operator.warnings.take()
		require.NoError(t, operator.Create(ctx, failoverRequest("second", env.DR, srv1alpha1.FailoverPlanned), dry))
		w := operator.warnings.take()
		require.True(t, anyContains(w, "FailoverRequest first of group web has not finished (phase Pending); this request waits in Pending"), "warnings: %q", w)

		// Deletion is refused while DRBD roles change, and explained otherwise.
		setPhase(t, q, first, srv1alpha1.FailoverWaitingForDRBD)
		denied(t, operator.Delete(ctx, first, dry), "FailoverRequest first cannot be deleted now: its DRBD roles are changing")
		setPhase(t, q, first, srv1alpha1.FailoverStoppingOnSource)
		require.NoError(t, operator.Delete(ctx, first))
		w = operator.warnings.take()
		require.True(t, anyContains(w, "the group is asked to run on its source again"), "warnings: %q", w)
	})

	t.Run("TestFailover", func(t *testing.T) {
		tf := &srv1alpha1.TestFailover{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "drill"},
			Spec:       srv1alpha1.TestFailoverSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: "nope"}, TargetCluster: env.DR},
		}
		denied(t, admin.Create(ctx, tf.DeepCopy(), client.DryRunAll), `ProtectionGroup "nope" does not exist`)
		tf.Spec.ProtectionGroupRef.Name = group
		tf.Spec.TargetCluster = env.Primary
		denied(t, admin.Create(ctx, tf.DeepCopy(), client.DryRunAll), `targetCluster "primary-cluster" cannot host a test of group web, which runs on primary-cluster; valid targets: dr-cluster`)
		tf.Spec.TargetCluster = env.DR
		require.NoError(t, admin.Create(ctx, tf.DeepCopy(), client.DryRunAll))
	})

	t.Run("ProtectionRequest", func(t *testing.T) {
		p := e.Client(env.Primary)
		disk := func(name, claim string, hotplug bool) kubevirtv1.Volume {
			return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{
				PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: hotplug,
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		}
		for _, vm := range []struct {
			name string
			vols []kubevirtv1.Volume
		}{
			{"ok", []kubevirtv1.Volume{disk("root", "ok-root", false)}},
			{"diskless", nil},
			{"hotplug", []kubevirtv1.Volume{disk("root", "ok-root", false), disk("extra", "ok-root", true)}},
			{"unmapped", []kubevirtv1.Volume{disk("root", "fast-root", false)}},
			{"unbound", []kubevirtv1.Volume{disk("root", "new-root", false)}},
		} {
			require.NoError(t, p.Create(ctx, &kubevirtv1.VirtualMachine{
				ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: vm.name},
				Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways),
					Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: vm.vols}}},
			}))
		}
		for claim, class := range map[string]string{"ok-root": "standard", "fast-root": "fast", "new-root": "standard"} {
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: claim},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
					Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resourceGi}}},
			}
			require.NoError(t, p.Create(ctx, pvc))
			if claim != "new-root" { // the provisioner has bound the others
				pvc.Status.Phase = corev1.ClaimBound
				require.NoError(t, p.Status().Update(ctx, pvc))
			}
		}
		protect := func(name, vm string) *srv1alpha1.ProtectionRequest {
			return &srv1alpha1.ProtectionRequest{
				ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
				Spec: srv1alpha1.ProtectionRequestSpec{VirtualMachine: srv1alpha1.VirtualMachineReference{Namespace: env.AppNS, Name: vm},
					ZoneRef: srv1alpha1.LocalObjectReference{Name: env.ZoneName}, ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group}},
			}
		}
		// The zone's clusters connect asynchronously; until the primary is
		// reached the request is admitted with a warning, never refused.
		env.Eventually(t, 30*time.Second, "the webhook reads the primary", func() error {
			if err := admin.Create(ctx, protect("probe", "missing"), client.DryRunAll); err != nil {
				return nil //nolint:nilerr // refused: the primary was read
			}
			return errors.New("admitted: the primary is not connected yet")
		})
		denied(t, admin.Create(ctx, protect("missing", "missing"), client.DryRunAll), "VirtualMachine apps/missing does not exist on the zone's primary cluster primary-cluster")
		denied(t, admin.Create(ctx, protect("diskless", "diskless"), client.DryRunAll), "VirtualMachine apps/diskless has no PersistentVolumeClaim or DataVolume disk to replicate")
		denied(t, admin.Create(ctx, protect("hotplug", "hotplug"), client.DryRunAll), `disk "extra" of VirtualMachine apps/hotplug is hot-plugged`)
		denied(t, admin.Create(ctx, protect("unmapped", "unmapped"), client.DryRunAll), `PVC fast-root uses StorageClass "fast", which has no entry in ProtectionZone production spec.storageMappings`)
		denied(t, admin.Create(ctx, protect("unbound", "unbound"), client.DryRunAll), `disk "root": PVC new-root is Pending, not Bound; protect the VM once its PVC is Bound`)
		require.NoError(t, admin.Create(ctx, protect("ok", "ok")))
		denied(t, admin.Create(ctx, protect("ok-again", "ok"), client.DryRunAll), "VirtualMachine apps/ok is already protected by ProtectionRequest ok")
	})

	t.Run("ProtectionZone", func(t *testing.T) {
		zone := func(name, primarySecret, drSecret string) *srv1alpha1.ProtectionZone {
			return &srv1alpha1.ProtectionZone{
				ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
				Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD,
					Clusters: []srv1alpha1.ZoneCluster{
						{Name: "a", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: primarySecret}},
						{Name: "b", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: drSecret}},
					},
					StorageMappings: []srv1alpha1.StorageMapping{{SourceStorageClass: "standard", TargetStorageClass: "standard"}}},
			}
		}
		insecure := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users: [{name: u, user: {token: s3cret-token}}]
`
		require.NoError(t, q.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "insecure"},
			Data: map[string][]byte{srv1alpha1.KubeconfigSecretKey: []byte(insecure)}}))
		denied(t, admin.Create(ctx, zone("z1", "absent", env.DR+"-kubeconfig"), client.DryRunAll), "cluster a: kubeconfig Secret absent does not exist in namespace dr-production")
		err := admin.Create(ctx, zone("z2", "insecure", env.DR+"-kubeconfig"), client.DryRunAll)
		denied(t, err, `cluster a: Secret insecure: kubeconfig not allowed: cluster "c" sets insecure-skip-tls-verify`)
		require.NotContains(t, err.Error(), "s3cret-token")
		denied(t, admin.Create(ctx, zone("z3", env.DR+"-kubeconfig", env.DR+"-kubeconfig"), client.DryRunAll), "clusters a and b both point at API server")
		noMapping := zone("z4", env.Primary+"-kubeconfig", env.DR+"-kubeconfig")
		noMapping.Spec.StorageMappings = nil
		denied(t, admin.Create(ctx, noMapping, client.DryRunAll), "storageBackend DRBD needs spec.storageMappings")
		require.NoError(t, admin.Create(ctx, zone("z5", env.Primary+"-kubeconfig", env.DR+"-kubeconfig"), client.DryRunAll))

		volsync := zone("z6", env.Primary+"-kubeconfig", env.DR+"-kubeconfig")
		volsync.Spec.StorageBackend, volsync.Spec.StorageMappings = srv1alpha1.BackendVolSync, nil
		denied(t, admin.Create(ctx, volsync.DeepCopy(), client.DryRunAll), "storageBackend VolSync needs a DRPolicy in namespace dr-production whose drClusters are the zone's clusters a and b")
		policy := &drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "a-b"},
			Spec: drv1alpha1.DRPolicySpec{DRClusters: []string{"a", "b"}, SchedulingInterval: "5m"}}
		require.NoError(t, q.Create(ctx, policy))
		denied(t, admin.Create(ctx, volsync.DeepCopy(), client.DryRunAll), "DRPolicy a-b needs spec.volumeSnapshotClassSelector")
		policy.Spec.VolumeSnapshotClassSelector.MatchLabels = map[string]string{"siterecovery.trilio.io/volsync": "true"}
		// VolSync's cron schedule cannot run every 90 minutes: refused, not
		// rounded to hourly.
		policy.Spec.SchedulingInterval = "90m"
		require.NoError(t, q.Update(ctx, policy))
		denied(t, admin.Create(ctx, volsync.DeepCopy(), client.DryRunAll),
			"storageBackend VolSync: DRPolicy a-b spec.schedulingInterval 90m cannot be honoured by VolSync's cron schedule, which repeats evenly only every 1, 2, 3, 4, 5, 6, 10, 12, 15, 20 or 30 minutes, 1, 2, 3, 4, 6, 8, 12 or 24 hours, or 7 days; use one of those")
		policy.Spec.SchedulingInterval = "5m"
		require.NoError(t, q.Update(ctx, policy))
		require.NoError(t, admin.Create(ctx, volsync.DeepCopy(), client.DryRunAll))

		// The zone webhook reads only DR namespaces whose quorum-control-plane
		// release grants it: elsewhere it says what to install.
		require.NoError(t, q.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dr-ungranted"}}))
		require.NoError(t, q.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dr-ungranted", Name: "a-kubeconfig"}}))
		elsewhere := zone("z7", "a-kubeconfig", "b-kubeconfig")
		elsewhere.Namespace = "dr-ungranted"
		denied(t, admin.Create(ctx, elsewhere, client.DryRunAll),
			"the ProtectionZone webhook may not read Secret a-kubeconfig in namespace dr-ungranted: it reads only DR namespaces whose quorum-control-plane release grants it access; install that chart in dr-ungranted first")

		prod := &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: env.ZoneName}}
		denied(t, admin.Delete(ctx, prod, client.DryRunAll), "ProtectionZone production is still used by ProtectionGroup production-pg, ProtectionGroup web; unprotect and finish those first")
		require.NoError(t, q.Get(ctx, client.ObjectKeyFromObject(prod), prod))
		prod.Annotations = map[string]string{admission.AllowZoneDeletionAnnotation: "true"}
		require.NoError(t, q.Update(ctx, prod))
		require.NoError(t, admin.Delete(ctx, prod, client.DryRunAll))
	})

	t.Run("DRPlacementControl", func(t *testing.T) {
		require.NoError(t, q.Create(ctx, &drv1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "policy"},
			Spec: drv1alpha1.DRPolicySpec{DRClusters: []string{env.Primary, env.DR}, SchedulingInterval: "5m"}}))
		drpc := &drv1alpha1.DRPlacementControl{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "app"},
			Spec: drv1alpha1.DRPlacementControlSpec{ProtectionGroupRef: srv1alpha1.LocalObjectReference{Name: group},
				DRPolicyRef: srv1alpha1.LocalObjectReference{Name: "policy"}, PreferredCluster: "mars"},
		}
		denied(t, admin.Create(ctx, drpc.DeepCopy(), client.DryRunAll), `spec.preferredCluster "mars" is not a cluster of DRPolicy policy; use one of: primary-cluster, dr-cluster`)
		drpc.Spec.DRPolicyRef.Name = "absent"
		denied(t, admin.Create(ctx, drpc.DeepCopy(), client.DryRunAll), `DRPolicy "absent" does not exist`)
		drpc.Spec.DRPolicyRef.Name, drpc.Spec.PreferredCluster = "policy", env.Primary
		require.NoError(t, admin.Create(ctx, drpc))

		// Actions: a failover needs a target (the schema), and not the cluster it runs on (the webhook).
		// It is typed with the group's name, as the confirmation policy asks.
		drpc.Status.PreferredDecision.ClusterName = env.Primary
		require.NoError(t, q.Status().Update(ctx, drpc))
		require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(drpc), drpc))
		drpc.Spec.Action = drv1alpha1.ActionFailover
		drpc.Annotations = map[string]string{srv1alpha1.ConfirmAnnotation: group}
		require.ErrorContains(t, admin.Update(ctx, drpc.DeepCopy(), client.DryRunAll), "failoverCluster is required when action is Failover", "the schema refuses this before the webhook")
		drpc.Spec.FailoverCluster = env.Primary
		denied(t, admin.Update(ctx, drpc.DeepCopy(), client.DryRunAll), "the workload already runs on primary-cluster; set spec.failoverCluster to the peer cluster")
		drpc.Spec.FailoverCluster = env.DR
		require.NoError(t, admin.Update(ctx, drpc.DeepCopy(), client.DryRunAll))
	})

	t.Run("ProtectionGroup boot plan", func(t *testing.T) { bootPlans(t, e, admin) })
	t.Run("ProtectionGroup networks", func(t *testing.T) { groupNetworks(t, e, admin) })
	t.Run("ProtectionGroup drill", func(t *testing.T) { drills(t, e, admin) })
	t.Run("ProtectionGroup consistency", func(t *testing.T) { consistency(t, e, admin) })

	t.Run("webhook down", func(t *testing.T) {
		webhooks.Stop(t)
		err := admin.Create(ctx, failoverRequest("while-down", env.DR, srv1alpha1.FailoverPlanned), client.DryRunAll)
		require.Error(t, err, "with failurePolicy Fail nothing is admitted unchecked")
		require.Contains(t, err.Error(), `failed calling webhook "failoverrequests.dr-production.siterecovery.trilio.io"`)
		// Another DR namespace has its own webhooks; this one's outage does not reach it.
		require.NoError(t, q.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dr-other"}}))
		other := failoverRequest("elsewhere", env.DR, srv1alpha1.FailoverPlanned)
		other.Namespace, other.Spec.ProtectionGroupRef.Namespace = "dr-other", "dr-other"
		require.NoError(t, admin.Create(ctx, other, client.DryRunAll))
	})
}

// The self-managed certificate rotates while the API server keeps calling the
// webhook: every call in between reaches it.
func TestWebhookCertificateRotates(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	o := e.InstallWebhooks(t, env.Quorum, "quorum-control-plane",
		env.WebhookRotation{CertDuration: 20 * time.Second, Lookahead: 16 * time.Second, RotationCheck: 500 * time.Millisecond})
	startWebhooks(t, e, o)
	admin := asUser(t, e, "")
	require.NoError(t, e.Client(env.Quorum).Create(ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: group},
		Spec:       srv1alpha1.ProtectionGroupSpec{ActiveCluster: env.Primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName}},
	}))
	waitServing(t, admin)

	secret := &corev1.Secret{}
	serial := func() string {
		require.NoError(t, e.Client(env.Quorum).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: o.SecretName}, secret))
		block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
		require.NotNil(t, block)
		cert, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		return cert.SerialNumber.String() + "/" + cert.NotBefore.String()
	}
	seen := map[string]bool{serial(): true}
	env.Eventually(t, 90*time.Second, "two rotations", func() error {
		// The API server reaches the webhook through each rotation: a refusal
		// from the webhook, never a TLS error.
		err := admin.Create(ctx, failoverRequest("probe", "mars", srv1alpha1.FailoverPlanned), client.DryRunAll)
		require.Error(t, err)
		require.Contains(t, err.Error(), `targetCluster "mars" is not a cluster of zone production`)
		seen[serial()] = true
		if len(seen) < 3 {
			return errors.New("not rotated twice yet")
		}
		return nil
	})
}

// waitServing waits until the webhook answers: the server starts once its
// certificate is written and its CA injected.
func waitServing(t *testing.T, u user) {
	t.Helper()
	env.Eventually(t, 60*time.Second, "the webhooks serve", func() error {
		err := u.Create(context.Background(), failoverRequest("probe", "mars", srv1alpha1.FailoverPlanned), client.DryRunAll)
		if err != nil && contains(err.Error(), "is not a cluster of zone") {
			return nil
		}
		return errors.New("not serving yet")
	})
}

// readmeFailover is the FailoverRequest manifest of the README.
func readmeFailover(t *testing.T) *srv1alpha1.FailoverRequest {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "README.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "```yaml\napiVersion: siterecovery.trilio.io/v1alpha1\nkind: FailoverRequest\n")
	require.True(t, ok, "the README shows a FailoverRequest")
	manifest, _, _ := strings.Cut(rest, "```")
	fr := &srv1alpha1.FailoverRequest{}
	require.NoError(t, yaml.UnmarshalStrict([]byte("apiVersion: siterecovery.trilio.io/v1alpha1\nkind: FailoverRequest\n"+manifest), fr))
	require.Equal(t, env.Namespace, fr.Namespace)
	return fr
}

func setPhase(t *testing.T, c client.Client, fr *srv1alpha1.FailoverRequest, p srv1alpha1.FailoverPhase) {
	t.Helper()
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(fr), fr))
	fr.Status.Phase = p
	require.NoError(t, c.Status().Update(context.Background(), fr))
}
