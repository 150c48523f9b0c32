package console_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/internal/console/ui"
	"github.com/siterecovery/siterecovery/test/drzone"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/harness"
)

const (
	group   = drzone.Group
	timeout = drzone.Timeout
	// scaleNamespace holds the groups of the render-time measurement.
	scaleNamespace = "dr-scale"
)

// zone is the operator-facing zone of test/drzone (a protected group of
// running VMs, PVC-backed disks and snapshots on both sides, and an unprotected
// VM "web-01" on the primary), a console in front of its quorum cluster, and
// tokens of a viewer and an operator.
type zone struct {
	*drzone.Zone
	t      *testing.T
	ctx    context.Context
	url    string
	tokens map[string]string
}

func newZone(t *testing.T, vms int) *zone {
	z := &zone{Zone: drzone.New(t, drzone.Options{VMs: vms, RPOObjectiveSeconds: 60, Unprotected: []string{"web-01"}}),
		t: t, ctx: context.Background(), tokens: map[string]string{}}
	z.Create(env.Quorum, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNamespace}})
	read := rbacv1.PolicyRule{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}
	write := rbacv1.PolicyRule{APIGroups: []string{srv1alpha1.GroupVersion.Group},
		Resources: []string{"failoverrequests", "testfailovers", "protectionrequests"}, Verbs: []string{"create"}}
	// The operator may also read the zone's kubeconfig Secrets, so the console
	// reads the workload clusters for it (the primary's VMs, the target's
	// taints); the viewer may not, and is told so.
	sites := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"},
		ResourceNames: []string{env.Primary + "-kubeconfig", env.DR + "-kubeconfig"}}
	z.user("viewer", read)
	z.user("operator", read, write, sites)

	z.url = serveHTTPS(t, server.New(server.Options{
		API: z.Clusters[env.Quorum].Config, Scheme: z.Scheme, UI: ui.FS(), TLS: true,
		Namespaces: []string{env.Namespace, scaleNamespace}, LoginAttempts: 1000,
	}))
	return z
}

// user creates a service account with rules in both DR namespaces of the
// quorum cluster and keeps a token of it.
func (z *zone) user(name string, rules ...rbacv1.PolicyRule) {
	z.t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name}}
	z.Create(env.Quorum, sa)
	for _, ns := range []string{env.Namespace, scaleNamespace} {
		z.Create(env.Quorum, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "console-" + name}, Rules: rules})
		z.Create(env.Quorum, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "console-" + name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "console-" + name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: env.Namespace, Name: name}}})
	}
	token, err := harness.ServiceAccountToken(z.ctx, z.Client(env.Quorum), env.Namespace, name, time.Hour)
	require.NoError(z.t, err)
	z.tokens[name] = token
}

// seedScale creates groups protection groups of vmsPerGroup VMs each, with
// replication statuses, in the scale namespace: objects only, no controller
// acts on them.
func (z *zone) seedScale(groups, vmsPerGroup int) {
	z.t.Helper()
	c := z.Client(env.Quorum)
	z.Create(env.Quorum, &srv1alpha1.ProtectionZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: scaleNamespace, Name: "scale"},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
			{Name: "east", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "east"}},
			{Name: "west", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "west"}},
		}},
	})
	for g := range groups {
		name := fmt.Sprintf("scale-%03d", g)
		var refs []srv1alpha1.VirtualMachineReference
		var states []srv1alpha1.VMReplicationState
		for v := range vmsPerGroup {
			vmName := fmt.Sprintf("%s-vm-%02d", name, v)
			refs = append(refs, srv1alpha1.VirtualMachineReference{Name: vmName, Namespace: "apps"})
			states = append(states, srv1alpha1.VMReplicationState{Name: vmName, Namespace: "apps", FailoverReady: true,
				Volumes: []srv1alpha1.VolumeReplicationState{{Volume: 0, ConnectionState: "Connected", DiskState: "UpToDate", PeerDiskState: "UpToDate", PercentInSync: "100"}}})
		}
		require.NoError(z.t, c.Create(z.ctx, &srv1alpha1.ProtectionGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: scaleNamespace, Name: name},
			Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: "east",
				ZoneRef: &srv1alpha1.LocalObjectReference{Name: "scale"}, Replication: srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: 60}},
		}))
		rgs := &srv1alpha1.ReplicationGroupStatus{
			ObjectMeta: metav1.ObjectMeta{Namespace: scaleNamespace, Name: name},
			Spec:       srv1alpha1.ReplicationGroupStatusSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: name, Namespace: scaleNamespace}, RPOObjectiveSeconds: 60},
		}
		require.NoError(z.t, c.Create(z.ctx, rgs))
		now := metav1.Now()
		rgs.Status = srv1alpha1.ReplicationGroupStatusStatus{Health: srv1alpha1.HealthHealthy, FailoverReady: true,
			MaxLagSeconds: int64(g % 90), LastUpdateTime: &now, VirtualMachines: states}
		if g%90 > 60 {
			rgs.Status.Health = srv1alpha1.HealthDegraded
		}
		require.NoError(z.t, c.Status().Update(z.ctx, rgs))
	}
}
