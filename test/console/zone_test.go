package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/server"
	"github.com/siterecovery/siterecovery/internal/console/ui"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

const (
	group   = "production-pg"
	timeout = 2 * time.Minute
	// scaleNamespace holds the groups of the render-time measurement.
	scaleNamespace = "dr-scale"
)

// zone is a protected group of running VMs on a three-cluster zone, a console
// in front of its quorum cluster, and tokens of a viewer and an operator.
type zone struct {
	*env.Env
	t      *testing.T
	ctx    context.Context
	url    string
	tokens map[string]string
}

func newZone(t *testing.T, vms int) *zone {
	z := &zone{Env: env.New(t, env.Options{}), t: t, ctx: context.Background(), tokens: map[string]string{}}
	for _, c := range []string{env.Primary, env.DR} {
		z.StartWorkload(t, c, env.WorkloadOptions{})
		z.StartAgent(t, c)
	}
	z.StartQuorum(t, setup.QuorumOptions{ProbeInterval: time.Second})
	fabric := z.DRBD(t)
	require.NoError(t, fabric.SetSyncRate(1<<30))

	var refs []srv1alpha1.VirtualMachineReference
	for i := range vms {
		name := fmt.Sprintf("vm-%02d", i)
		refs = append(refs, srv1alpha1.VirtualMachineReference{Name: name, Namespace: env.AppNS})
		z.create(env.Primary, vm(name, kubevirtv1.RunStrategyAlways))
		z.create(env.DR, vm(name, kubevirtv1.RunStrategyHalted))
		z.create(env.Primary, env.DRBDReplica(group, name, env.Primary, env.DR, 0, int32(7000+i)))
		z.create(env.DR, env.DRBDReplica(group, name, env.DR, env.Primary, 1, int32(7000+i)))
	}
	for _, r := range refs {
		z.waitDRBD(env.Primary, r.Name, func(d *srv1alpha1.DRBDResource) bool { return d.Status.MetadataCreated && len(d.Status.Peers) == 1 })
		require.NoError(t, fabric.MarkUpToDate(srv1alpha1.DRBDResourceName(r.Name), env.Nodes[env.Primary].Name))
		z.setPrimary(r.Name)
	}
	for _, r := range refs {
		z.waitDRBD(env.Primary, r.Name, func(d *srv1alpha1.DRBDResource) bool {
			return d.Status.Role == "Primary" && len(d.Status.Peers) == 1 && d.Status.Peers[0].Volumes[0].PeerDiskState == "UpToDate"
		})
	}
	z.create(env.Primary, env.WorkloadGroup(group, refs, srv1alpha1.StateRunning))
	z.create(env.DR, env.WorkloadGroup(group, refs, srv1alpha1.StateStopped))
	z.create(env.Quorum, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: group},
		Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: refs, ActiveCluster: env.Primary,
			ZoneRef:     &srv1alpha1.LocalObjectReference{Name: env.ZoneName},
			Replication: srv1alpha1.ReplicationSettings{RPOObjectiveSeconds: 60}},
	})
	// A VM the operator protects through the form.
	z.create(env.Primary, vm("web-01", kubevirtv1.RunStrategyAlways))

	z.create(env.Quorum, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNamespace}})
	read := rbacv1.PolicyRule{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}
	write := rbacv1.PolicyRule{APIGroups: []string{srv1alpha1.GroupVersion.Group},
		Resources: []string{"failoverrequests", "testfailovers", "protectionrequests"}, Verbs: []string{"create"}}
	z.user("viewer", read)
	z.user("operator", read, write)

	srv := httptest.NewServer(server.New(server.Options{
		API: z.Clusters[env.Quorum].Config, Scheme: z.Scheme, UI: ui.FS(),
		Namespaces: []string{env.Namespace, scaleNamespace}, LoginAttempts: 1000,
	}))
	t.Cleanup(srv.Close)
	z.url = srv.URL
	return z
}

// user creates a service account with rules in both DR namespaces of the
// quorum cluster and keeps a token of it.
func (z *zone) user(name string, rules ...rbacv1.PolicyRule) {
	z.t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name}}
	z.create(env.Quorum, sa)
	for _, ns := range []string{env.Namespace, scaleNamespace} {
		z.create(env.Quorum, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "console-" + name}, Rules: rules})
		z.create(env.Quorum, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "console-" + name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "console-" + name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: env.Namespace, Name: name}}})
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	require.NoError(z.t, z.Client(env.Quorum).SubResource("token").Create(z.ctx, sa, tr))
	z.tokens[name] = tr.Status.Token
}

func vm(name string, s kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name},
		Spec:       kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(s), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
	}
}

func (z *zone) create(cluster string, obj client.Object) {
	z.t.Helper()
	require.NoError(z.t, z.Client(cluster).Create(z.ctx, obj))
}

func (z *zone) setPrimary(vmName string) {
	z.t.Helper()
	r := &srv1alpha1.DRBDResource{}
	require.NoError(z.t, z.Client(env.Primary).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: srv1alpha1.DRBDResourceName(vmName)}, r))
	before := r.DeepCopy()
	r.Spec.Role = srv1alpha1.RolePrimary
	require.NoError(z.t, z.Client(env.Primary).Patch(z.ctx, r, client.MergeFrom(before)))
}

func (z *zone) waitDRBD(cluster, vmName string, ok func(*srv1alpha1.DRBDResource) bool) {
	z.t.Helper()
	env.Eventually(z.t, timeout, cluster+" "+vmName+" DRBD", func() error {
		r := &srv1alpha1.DRBDResource{}
		if err := z.Client(cluster).Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: srv1alpha1.DRBDResourceName(vmName)}, r); err != nil {
			return err
		}
		if !ok(r) {
			return fmt.Errorf("status %+v", r.Status)
		}
		return nil
	})
}

// seedScale creates groups protection groups of vmsPerGroup VMs each, with
// replication statuses, in the scale namespace: objects only, no controller
// acts on them.
func (z *zone) seedScale(groups, vmsPerGroup int) {
	z.t.Helper()
	c := z.Client(env.Quorum)
	z.create(env.Quorum, &srv1alpha1.ProtectionZone{
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
