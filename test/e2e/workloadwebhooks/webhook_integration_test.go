package workloadwebhooks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/workload/admission"
	wsetup "github.com/siterecovery/siterecovery/internal/workload/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

const group = "web"

// pg-controller's webhooks, called by a real kube-apiserver through the
// configuration the workload-control-plane chart renders. The user refused is
// a cluster admin: RBAC lets her do anything, the webhook does not.
func TestWorkloadWebhooks(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	dr := e.Client(env.DR)
	self := whoAmI(t, e.Clusters[env.DR].Config)
	require.NoError(t, dr.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mallory-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "mallory"}},
	}))
	mallory := impersonate(t, e, "mallory")

	// The DR side of a group: held stopped, its VM Halted.
	refs := []srv1alpha1.VirtualMachineReference{{Namespace: env.AppNS, Name: "db"}}
	require.NoError(t, dr.Create(ctx, env.WorkloadGroup(group, refs, srv1alpha1.StateStopped)))
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "db", Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: group}},
		Spec:       kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted), Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}},
	}
	require.NoError(t, dr.Create(ctx, vm))
	replica := env.DRBDReplica(group, "db", env.DR, env.Primary, 1, 7000)
	require.NoError(t, dr.Create(ctx, replica))
	frontend := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "db-root-drbd", Labels: map[string]string{srv1alpha1.ObjectRoleLabel: srv1alpha1.ObjectRoleFrontend}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	require.NoError(t, dr.Create(ctx, frontend))
	alloc := &srv1alpha1.DRBDAllocation{ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.DRBDAllocationName},
		Spec: srv1alpha1.DRBDAllocationSpec{Claims: []srv1alpha1.DRBDClaim{{RequestUID: "u1", DRNamespace: env.Namespace, Request: "protect-db",
			Port: 7000, Minors: []int32{1000}, ClaimedAt: metav1.Now()}}}}
	require.NoError(t, dr.Create(ctx, alloc))

	// The webhooks are registered once the fixtures exist, as siterecovery
	// created them; from then on every change goes through them.
	o := e.InstallWebhooks(t, env.DR, "workload-control-plane", env.WebhookRotation{})
	e.Manager(t, env.DR, "pg-webhooks", ctrl.Options{WebhookServer: o.Server()}, func(mgr ctrl.Manager) error {
		return wsetup.ServeWebhooks(mgr, wsetup.PGOptions{Allowed: admission.Identities{Users: []string{self}, Groups: admission.DefaultGroups}}, o)
	})
	// The webhook serves once its certificate is in place.
	env.Eventually(t, 60*time.Second, "the webhooks serve", func() error {
		if err := mallory.Delete(ctx, replica.DeepCopy(), client.DryRunAll); err != nil && contains(err.Error(), "denied the request") {
			return nil
		}
		return errors.New("not serving yet")
	})

	t.Run("standby VM", func(t *testing.T) {
		start := func(c client.Client) error {
			v := &kubevirtv1.VirtualMachine{}
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(vm), v))
			v.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
			return c.Update(ctx, v, client.DryRunAll)
		}
		denied(t, start(mallory), `VirtualMachine apps/db is the standby copy of protection group web, which is held stopped on this cluster`)
		denied(t, start(mallory), `User "mallory" may not start it: only users `+self)
		require.NoError(t, start(dr), "siterecovery's own identity may")
		// Other edits of the halted standby are not refused.
		v := &kubevirtv1.VirtualMachine{}
		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(vm), v))
		v.Labels["team"] = "db"
		require.NoError(t, mallory.Update(ctx, v, client.DryRunAll))
	})

	t.Run("replication objects", func(t *testing.T) {
		r := &srv1alpha1.DRBDResource{}
		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(replica), r))
		r.Spec.Role = srv1alpha1.RolePrimary
		denied(t, mallory.Update(ctx, r.DeepCopy(), client.DryRunAll), "DRBDResource apps/vm-db is managed by siterecovery; its spec changes only through the quorum cluster's requests")
		denied(t, mallory.Delete(ctx, replica.DeepCopy(), client.DryRunAll), "DRBDResource apps/vm-db is part of siterecovery's replication; deleting it by hand breaks replication")
		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(replica), r))
		r.Labels["audited"] = "yes"
		require.NoError(t, mallory.Update(ctx, r, client.DryRunAll), "labels stay writable")
		require.NoError(t, dr.Delete(ctx, replica.DeepCopy(), client.DryRunAll), "siterecovery's own identity may")

		denied(t, mallory.Delete(ctx, frontend.DeepCopy(), client.DryRunAll), "PersistentVolumeClaim apps/db-root-drbd is part of siterecovery's replication")
		other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "scratch"}, Spec: frontend.Spec}
		require.NoError(t, dr.Create(ctx, other))
		require.NoError(t, mallory.Delete(ctx, other), "other PVCs are not this webhook's business")

		pg := &srv1alpha1.ProtectionGroup{}
		require.NoError(t, mallory.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, pg))
		pg.Spec.DesiredState = srv1alpha1.StateRunning
		denied(t, mallory.Update(ctx, pg, client.DryRunAll), "ProtectionGroup dr-production/web is managed by siterecovery")
	})

	// The cluster's claims of DRBD ports and minors, across DR namespaces.
	t.Run("DRBD allocation", func(t *testing.T) {
		a := &srv1alpha1.DRBDAllocation{}
		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(alloc), a))
		a.Spec.Claims = nil
		denied(t, mallory.Update(ctx, a.DeepCopy(), client.DryRunAll), "DRBDAllocation default holds the DRBD replication ports and minors")
		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(alloc), a))
		a.Spec.Claims[0].Port = 7001
		denied(t, mallory.Update(ctx, a.DeepCopy(), client.DryRunAll), "its claims change only when quorum-manager protects or unprotects a VM")
		denied(t, mallory.Update(ctx, a.DeepCopy(), client.DryRunAll), `User "mallory" may not: only users `+self)
		denied(t, mallory.Delete(ctx, alloc.DeepCopy(), client.DryRunAll), "deleting it lets the next protect give a port or minor in use to a second VM")

		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(alloc), a))
		a.Labels = map[string]string{"audited": "yes"}
		require.NoError(t, mallory.Update(ctx, a, client.DryRunAll), "labels stay writable")

		require.NoError(t, dr.Get(ctx, client.ObjectKeyFromObject(alloc), a))
		a.Spec.Claims = append(a.Spec.Claims, srv1alpha1.DRBDClaim{RequestUID: "u2", DRNamespace: env.Namespace, Port: 7001, Minors: []int32{1001}, ClaimedAt: metav1.Now()})
		require.NoError(t, dr.Update(ctx, a, client.DryRunAll), "siterecovery's own identity claims")
		require.NoError(t, dr.Delete(ctx, alloc.DeepCopy(), client.DryRunAll), "siterecovery's own identity may")
	})
}

func whoAmI(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	r := &authenticationv1.SelfSubjectReview{}
	require.NoError(t, c.Create(context.Background(), r))
	return r.Status.UserInfo.Username
}

func impersonate(t *testing.T, e *env.Env, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(e.Clusters[env.DR].Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	require.NoError(t, err)
	return c
}

func denied(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err, "the webhook should refuse")
	require.Contains(t, err.Error(), "denied the request")
	require.Contains(t, err.Error(), want)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
