package admission_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// networkAttachment creates a Multus NetworkAttachmentDefinition.
func networkAttachment(t *testing.T, c client.Client, namespace, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("k8s.cni.cncf.io/v1")
	u.SetKind("NetworkAttachmentDefinition")
	u.SetNamespace(namespace)
	u.SetName(name)
	require.NoError(t, unstructured.SetNestedField(u.Object, `{"cniVersion":"0.3.1","type":"bridge"}`, "spec", "config"))
	require.NoError(t, c.Create(context.Background(), u))
}

// groupNetworks checks the ProtectionGroup webhook's network check (a
// subtest of TestQuorumWebhooks): a new group whose VM uses a Multus network
// that the DR cluster lacks and nothing maps is refused with the VM, the
// network and the pair; a group mapping it is admitted, with a warning when
// the mapped network is missing too; the zone's mapping serves every group;
// a group's mapping changed to leave the network unmapped is refused.
func groupNetworks(t *testing.T, e *env.Env, admin user) {
	ctx := context.Background()
	primary, dr := e.Client(env.Primary), e.Client(env.DR)
	for _, ns := range []string{env.AppNS, "infra"} {
		for _, c := range []client.Client{primary, dr} {
			require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
		}
	}
	require.NoError(t, primary.Create(ctx, &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "multi-homed"},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Networks: []kubevirtv1.Network{
					{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
					{Name: "storage", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "storage"}}},
					{Name: "backup", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "infra/backup"}}},
				}}}},
	}))
	networkAttachment(t, primary, env.AppNS, "storage")
	networkAttachment(t, primary, "infra", "backup")
	networkAttachment(t, dr, env.AppNS, "storage")
	networkAttachment(t, dr, "infra", "dr-backup")

	newGroup := func(name string, mappings ...srv1alpha1.NetworkMapping) *srv1alpha1.ProtectionGroup {
		return &srv1alpha1.ProtectionGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
			Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: env.Primary, ZoneRef: &srv1alpha1.LocalObjectReference{Name: env.ZoneName},
				VirtualMachines: []srv1alpha1.VirtualMachineReference{{Namespace: env.AppNS, Name: "multi-homed"}},
				NetworkMappings: mappings},
		}
	}
	backupTo := func(target string) srv1alpha1.NetworkMapping {
		return srv1alpha1.NetworkMapping{SourceCluster: env.Primary, TargetCluster: env.DR,
			Networks: []srv1alpha1.MultusNetworkMap{{Source: "infra/backup", Target: target}}}
	}
	const missing = "ProtectionGroup unmapped: VM apps/multi-homed network backup uses NetworkAttachmentDefinition infra/backup, " +
		"which no networkMappings entry from primary-cluster to dr-cluster maps and cluster dr-cluster does not have; " +
		"map them in the zone's or the group's spec.networkMappings, or create them on the target"
	// storage exists on the DR cluster under its name; backup does not. The
	// webhook reaches both clusters once they are connected (until then it
	// admits with a warning).
	env.Eventually(t, 30*time.Second, "a missing unmapped network is refused", func() error {
		err := admin.Create(ctx, newGroup("unmapped"), client.DryRunAll)
		admin.warnings.take()
		if err == nil {
			return errors.New("admitted")
		}
		if !strings.Contains(err.Error(), missing) {
			return err
		}
		return nil
	})
	denied(t, admin.Create(ctx, newGroup("unmapped")), missing)

	require.NoError(t, admin.Create(ctx, newGroup("mapped", backupTo("infra/dr-backup")), client.DryRunAll))
	require.Empty(t, admin.warnings.take())
	require.NoError(t, admin.Create(ctx, newGroup("mapped-missing", backupTo("infra/nowhere")), client.DryRunAll))
	w := admin.warnings.take()
	require.Equal(t, []string{"VM apps/multi-homed network backup (infra/backup) is mapped from primary-cluster to infra/nowhere, which cluster dr-cluster does not have"}, w)

	// The zone's mapping serves a group that has none.
	patchZone := func(mappings []srv1alpha1.NetworkMapping) {
		z := &srv1alpha1.ProtectionZone{}
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.ZoneName}, z))
		before := z.DeepCopy()
		z.Spec.NetworkMappings = mappings
		require.NoError(t, admin.Patch(ctx, z, client.MergeFrom(before)))
	}
	patchZone([]srv1alpha1.NetworkMapping{backupTo("infra/dr-backup")})
	// The webhook reads the zone from its cache, which sees the patch a
	// moment later; until then it refuses as before.
	env.Eventually(t, 30*time.Second, "the zone's mapping admits the group", func() error {
		err := admin.Create(ctx, newGroup("zone-mapped"), client.DryRunAll)
		admin.warnings.take()
		return err
	})
	require.NoError(t, admin.Create(ctx, newGroup("zone-mapped")))
	require.Empty(t, admin.warnings.take())

	// The group's own entry replaces the zone's whole: one that maps only
	// storage leaves backup unmapped, and the change is refused.
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "zone-mapped"}, g))
	g.Spec.NetworkMappings = []srv1alpha1.NetworkMapping{{SourceCluster: env.Primary, TargetCluster: env.DR,
		Networks: []srv1alpha1.MultusNetworkMap{{Source: "storage", Target: "storage"}}}}
	denied(t, admin.Update(ctx, g.DeepCopy(), client.DryRunAll), "ProtectionGroup zone-mapped: VM apps/multi-homed network backup uses NetworkAttachmentDefinition infra/backup")
	patchZone(nil)
}
