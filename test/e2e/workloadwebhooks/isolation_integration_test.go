package workloadwebhooks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/siterecovery/siterecovery/test/chartrender"
	"github.com/siterecovery/siterecovery/test/env"
)

const (
	staging = "dr-staging"
	billing = "billing"
)

// The attacks of issue 39 on pg-controller's webhooks, performed as the
// attacker would on a real kube-apiserver through the configuration the
// workload-control-plane chart renders: an application namespace admin who
// relabels what the webhooks used to select by, deletes the standby or puts a
// VM of her own on the DR copy's disks; and dr-staging's quorum-manager, with
// the cluster-wide rights the chart gives every DR namespace, acting on
// dr-production's replication. Each is refused with a message that says why;
// the product's own identities still pass.
func TestWorkloadWebhooksIsolation(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	dr := e.Client(env.DR)
	self := whoAmI(t, e.Clusters[env.DR].Config)
	installQuorumAccess(t, dr, env.Namespace, staging)
	grantNamespaceAdmin(t, dr, env.AppNS, "mallory")
	mallory := impersonate(t, e, "mallory")
	production := impersonateSA(t, e, env.Namespace, "quorum-manager")
	stagingQM := impersonateSA(t, e, staging, "quorum-manager")

	// dr-production's group, held stopped here: its standby VM, DRBD replica,
	// DR backing and frontend PVCs, and its claim beside dr-staging's.
	refs := []srv1alpha1.VirtualMachineReference{{Namespace: env.AppNS, Name: "db"}}
	require.NoError(t, dr.Create(ctx, env.WorkloadGroup(group, refs, srv1alpha1.StateStopped)))
	standby := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "db", Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: group}},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted),
			Template: vmTemplate(pvcVolume("root", "db-root-drbd"))},
	}
	require.NoError(t, dr.Create(ctx, standby))
	replica := env.DRBDReplica(group, "db", env.DR, env.Primary, 1, 7000)
	require.NoError(t, dr.Create(ctx, replica))
	stackPVC := func(name, role string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name, Labels: map[string]string{
				srv1alpha1.ObjectRoleLabel: role, srv1alpha1.DRNamespaceLabel: env.Namespace,
				srv1alpha1.ProtectionRequestLabel: "protect-db", srv1alpha1.ProtectionGroupLabel: group}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
	}
	backing := stackPVC("db-root", srv1alpha1.ObjectRoleBacking)
	frontend := stackPVC("db-root-drbd", srv1alpha1.ObjectRoleFrontend)
	scratch := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "scratch"}, Spec: backing.Spec}
	for _, pvc := range []*corev1.PersistentVolumeClaim{backing, frontend, scratch} {
		require.NoError(t, dr.Create(ctx, pvc))
	}
	claim := func(ns, uid string, port int32) srv1alpha1.DRBDClaim {
		return srv1alpha1.DRBDClaim{RequestUID: uid, DRNamespace: ns, Request: "protect-" + uid, Port: port, Minors: []int32{port - 6000}, ClaimedAt: metav1.Now()}
	}
	alloc := &srv1alpha1.DRBDAllocation{ObjectMeta: metav1.ObjectMeta{Name: srv1alpha1.DRBDAllocationName},
		Spec: srv1alpha1.DRBDAllocationSpec{Claims: []srv1alpha1.DRBDClaim{claim(env.Namespace, "prod-1", 7000), claim(staging, "stag-1", 7001)}}}
	require.NoError(t, dr.Create(ctx, alloc))

	// dr-staging also protects billing, where dr-production's group copy
	// names a VM: the webhook sees billing, and dr-production's identity may
	// not act there.
	require.NoError(t, dr.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: billing}}))
	ledgerRefs := []srv1alpha1.VirtualMachineReference{{Namespace: billing, Name: "ledger"}}
	require.NoError(t, dr.Create(ctx, env.WorkloadGroup("ledger", ledgerRefs, srv1alpha1.StateStopped)))
	ledger := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: billing, Name: "ledger"},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted), Template: vmTemplate(pvcVolume("root", "scratch"))}}
	require.NoError(t, dr.Create(ctx, ledger))
	ledgerBacking := stackPVC("ledger-root", srv1alpha1.ObjectRoleBacking)
	ledgerBacking.Namespace = billing
	require.NoError(t, dr.Create(ctx, ledgerBacking))
	apps := map[string][]string{env.Namespace: {env.AppNS}, staging: {env.AppNS, billing}}
	o := e.InstallWebhooksValues(t, env.DR, "workload-control-plane", map[string]any{"quorumAccess": map[string]any{
		"drNamespaces":          []any{env.Namespace, staging},
		"applicationNamespaces": map[string]any{env.Namespace: []any{env.AppNS}, staging: []any{env.AppNS, billing}}}}, env.WebhookRotation{})
	allowed := admission.Identities{Users: []string{self}, Groups: admission.DefaultGroups, DRNamespaces: []string{env.Namespace, staging},
		ApplicationNamespaces: apps}
	e.Manager(t, env.DR, "pg-webhooks", ctrl.Options{WebhookServer: o.Server()}, func(mgr ctrl.Manager) error {
		return wsetup.ServeWebhooks(mgr, wsetup.PGOptions{Allowed: allowed}, o)
	})
	env.Eventually(t, 60*time.Second, "the webhooks serve", func() error {
		if err := mallory.Delete(ctx, replica.DeepCopy(), client.DryRunAll); err != nil && strings.Contains(err.Error(), "denied the request") {
			return nil
		}
		return errors.New("not serving yet")
	})
	// quorum-manager patches (its rights on the workload clusters hold patch, not update).
	start := func(c client.Client) error {
		v := &kubevirtv1.VirtualMachine{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(standby), v))
		base := v.DeepCopy()
		v.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
		return c.Patch(ctx, v, client.MergeFrom(base), client.DryRunAll)
	}
	const standbyMsg = "VirtualMachine apps/db is the standby copy of protection group web, which is held stopped on this cluster"

	// Finding 5: the webhooks selected PVCs and VMs by labels their editor
	// controls. A relabel is now refused itself, and a VM is a standby by the
	// group that lists it, whatever its labels.
	t.Run("namespace admin relabels", func(t *testing.T) {
		p := &corev1.PersistentVolumeClaim{}
		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(backing), p))
		delete(p.Labels, srv1alpha1.ObjectRoleLabel)
		denied(t, mallory.Update(ctx, p), "PersistentVolumeClaim apps/db-root carries label siterecovery.trilio.io/role, which says what it is to siterecovery; only siterecovery changes it")
		denied(t, mallory.Delete(ctx, backing.DeepCopy(), client.DryRunAll), "PersistentVolumeClaim apps/db-root is part of siterecovery's replication")
		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(backing), p))
		p.Labels["team"] = "db"
		require.NoError(t, mallory.Update(ctx, p, client.DryRunAll), "labels of her own stay writable")

		v := &kubevirtv1.VirtualMachine{}
		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(standby), v))
		delete(v.Labels, srv1alpha1.ProtectionGroupLabel)
		require.NoError(t, mallory.Update(ctx, v), "the VM's labels are hers; they no longer decide what it is")
		denied(t, start(mallory), standbyMsg)
		denied(t, start(mallory), "Fail the group over with a FailoverRequest in DR namespace dr-production on the quorum cluster instead")
	})

	t.Run("namespace admin deletes the standby", func(t *testing.T) {
		denied(t, mallory.Delete(ctx, standby.DeepCopy()), standbyMsg+"; deleting it leaves the group without its copy of the VM here")
	})

	t.Run("namespace admin reuses the DR copy's disks", func(t *testing.T) {
		thief := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "thief"},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways), Template: vmTemplate(pvcVolume("root", "db-root"))}}
		denied(t, mallory.Create(ctx, thief.DeepCopy(), client.DryRunAll),
			"VirtualMachine apps/thief may not use PersistentVolumeClaim apps/db-root: it is the DR copy of a protected VM's disk")
		asDV := thief.DeepCopy()
		asDV.Spec.Template = vmTemplate(kubevirtv1.Volume{Name: "root", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "db-root-drbd"}}})
		denied(t, mallory.Create(ctx, asDV, client.DryRunAll), "may not use PersistentVolumeClaim apps/db-root-drbd: it is the DRBD device of a protected VM's disk")

		own := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "own"},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways), Template: vmTemplate(pvcVolume("root", "scratch"))}}
		require.NoError(t, mallory.Create(ctx, own), "a VM on a PVC of her own")
		v := &kubevirtv1.VirtualMachine{}
		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(own), v))
		v.Spec.Template.Spec.Volumes = append(v.Spec.Template.Spec.Volumes, pvcVolume("data", "db-root"))
		v.Spec.Template.Spec.Domain.Devices.Disks = append(v.Spec.Template.Spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: "data"})
		denied(t, mallory.Update(ctx, v, client.DryRunAll), "VirtualMachine apps/own may not use PersistentVolumeClaim apps/db-root")
		require.NoError(t, mallory.Get(ctx, client.ObjectKeyFromObject(own), v))
		v.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
		require.NoError(t, mallory.Update(ctx, v, client.DryRunAll), "other edits of her VM pass")
	})

	// Finding 4: dr-staging's quorum-manager has the same cluster-wide rights
	// as dr-production's, and no longer passes for dr-production's objects.
	t.Run("dr-staging acts on dr-production", func(t *testing.T) {
		const other = "belongs to DR namespace dr-production; the quorum-manager of DR namespace dr-staging"
		r := &srv1alpha1.DRBDResource{}
		require.NoError(t, stagingQM.Get(ctx, client.ObjectKeyFromObject(replica), r))
		base := r.DeepCopy()
		r.Spec.Role = srv1alpha1.RolePrimary
		denied(t, stagingQM.Patch(ctx, r.DeepCopy(), client.MergeFrom(base), client.DryRunAll), "DRBDResource apps/vm-db "+other)
		r.Spec.Role = srv1alpha1.RoleSecondary
		r.Labels[srv1alpha1.DRNamespaceLabel] = staging
		denied(t, stagingQM.Patch(ctx, r.DeepCopy(), client.MergeFrom(base), client.DryRunAll), "DRBDResource apps/vm-db "+other)
		denied(t, stagingQM.Delete(ctx, backing.DeepCopy(), client.DryRunAll), "PersistentVolumeClaim apps/db-root "+other)
		denied(t, start(stagingQM), standbyMsg)
		denied(t, stagingQM.Delete(ctx, standby.DeepCopy(), client.DryRunAll), standbyMsg)
		thief := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "thief"},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted), Template: vmTemplate(pvcVolume("root", "db-root"))}}
		denied(t, stagingQM.Create(ctx, thief, client.DryRunAll), "may not use PersistentVolumeClaim apps/db-root")

		a := &srv1alpha1.DRBDAllocation{}
		require.NoError(t, stagingQM.Get(ctx, client.ObjectKeyFromObject(alloc), a))
		a.Spec.Claims = a.Spec.Claims[1:]
		denied(t, stagingQM.Update(ctx, a.DeepCopy(), client.DryRunAll), "DRBDAllocation default: this changes claims of other DR namespaces (dr-production)")
		require.NoError(t, stagingQM.Get(ctx, client.ObjectKeyFromObject(alloc), a))
		a.Spec.Claims[0].Port = 7002
		denied(t, stagingQM.Update(ctx, a.DeepCopy(), client.DryRunAll), "changes claims of other DR namespaces (dr-production)")
		require.NoError(t, stagingQM.Get(ctx, client.ObjectKeyFromObject(alloc), a))
		a.Spec.Claims[1].Port = 7003
		a.Spec.Claims = append(a.Spec.Claims, claim(staging, "stag-2", 7004))
		require.NoError(t, stagingQM.Update(ctx, a, client.DryRunAll), "its own claims")
	})

	// A DR namespace's identity acts on VMs only in the application
	// namespaces it protects (quorumAccess.applicationNamespaces), even
	// where its own group copy names another namespace's VM.
	t.Run("dr-production acts outside its application namespaces", func(t *testing.T) {
		const outside = "namespace billing is not among the application namespaces DR namespace dr-production protects on this cluster " +
			"(quorumAccess.applicationNamespaces.dr-production of the workload-control-plane chart, pg-controller --admission-application-namespaces: apps)"
		v := &kubevirtv1.VirtualMachine{}
		require.NoError(t, production.Get(ctx, client.ObjectKeyFromObject(ledger), v))
		base := v.DeepCopy()
		v.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
		denied(t, production.Patch(ctx, v, client.MergeFrom(base), client.DryRunAll), "starting VirtualMachine billing/ledger, the standby copy of protection group ledger: "+outside)
		denied(t, production.Delete(ctx, ledger.DeepCopy(), client.DryRunAll), "deleting VirtualMachine billing/ledger, the standby copy of protection group ledger: "+outside)
		thief := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: billing, Name: "thief"},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted), Template: vmTemplate(pvcVolume("root", "ledger-root"))}}
		denied(t, production.Create(ctx, thief, client.DryRunAll), "VirtualMachine billing/thief may not use PersistentVolumeClaim billing/ledger-root: "+outside)
	})

	t.Run("the product's own flows pass", func(t *testing.T) {
		require.NoError(t, start(production), "dr-production's quorum-manager")
		require.NoError(t, start(dr), "pg-controller")
		r := &srv1alpha1.DRBDResource{}
		require.NoError(t, production.Get(ctx, client.ObjectKeyFromObject(replica), r))
		base := r.DeepCopy()
		r.Spec.Role = srv1alpha1.RolePrimary
		require.NoError(t, production.Patch(ctx, r, client.MergeFrom(base), client.DryRunAll), "a failover's promotion")
		p := &corev1.PersistentVolumeClaim{}
		require.NoError(t, production.Get(ctx, client.ObjectKeyFromObject(backing), p))
		pbase := p.DeepCopy()
		for _, l := range []string{srv1alpha1.ObjectRoleLabel, srv1alpha1.DRNamespaceLabel, srv1alpha1.ProtectionRequestLabel} {
			delete(p.Labels, l)
		}
		require.NoError(t, production.Patch(ctx, p, client.MergeFrom(pbase), client.DryRunAll), "a forced unprotect keeps the backing PVC without the request's labels")
		require.NoError(t, production.Delete(ctx, backing.DeepCopy(), client.DryRunAll), "removing protection")
		vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "restarted"},
			Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways), Template: vmTemplate(pvcVolume("root", "db-root"))}}
		require.NoError(t, production.Create(ctx, vm, client.DryRunAll), "its own VM on its own DR copy")
		require.NoError(t, production.Delete(ctx, standby.DeepCopy(), client.DryRunAll), "pg-sync removes its standby")
		a := &srv1alpha1.DRBDAllocation{}
		require.NoError(t, production.Get(ctx, client.ObjectKeyFromObject(alloc), a))
		a.Spec.Claims = a.Spec.Claims[1:]
		require.NoError(t, production.Update(ctx, a, client.DryRunAll), "releasing its own claim")
	})
}

// installQuorumAccess creates what the workload chart renders for each DR
// namespace's quorum-manager: its namespace, ServiceAccount and RBAC (the
// admission guard is another test's subject).
func installQuorumAccess(t *testing.T, c client.Client, drNamespaces ...string) {
	t.Helper()
	var names []any
	for _, ns := range drNamespaces {
		names = append(names, ns)
	}
	objs, err := chartrender.RenderValues("workload-control-plane", "siterecovery-system",
		map[string]any{"quorumAccess": map[string]any{"drNamespaces": names}})
	require.NoError(t, err)
	for _, obj := range objs {
		if obj.GetLabels()["app.kubernetes.io/name"] != "quorum-access" && obj.GetKind() != "Namespace" {
			continue
		}
		switch obj.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := c.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err, "%s %s", obj.GetKind(), obj.GetName())
			}
		}
	}
}

// grantNamespaceAdmin makes user an admin of namespace, KubeVirt's VMs and
// PVCs included, as a cluster's admin role aggregated with KubeVirt's is.
func grantNamespaceAdmin(t *testing.T, c client.Client, namespace, user string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "vm-admin"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines"}, Verbs: []string{"*"}},
			{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"*"}},
			{APIGroups: []string{srv1alpha1.GroupVersion.Group}, Resources: []string{"drbdresources"}, Verbs: []string{"*"}},
		}}))
	require.NoError(t, c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "vm-admin-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "vm-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}))
}

// impersonateSA acts as a ServiceAccount, with the groups its token carries.
func impersonateSA(t *testing.T, e *env.Env, namespace, name string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(e.Clusters[env.DR].Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	require.NoError(t, err)
	return c
}

func pvcVolume(name, claim string) kubevirtv1.Volume {
	return kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
}

// vmTemplate is a VM template with one disk per volume, as KubeVirt's schema
// and admission rules require.
func vmTemplate(volumes ...kubevirtv1.Volume) *kubevirtv1.VirtualMachineInstanceTemplateSpec {
	tmpl := &kubevirtv1.VirtualMachineInstanceTemplateSpec{}
	for _, v := range volumes {
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, v)
		tmpl.Spec.Domain.Devices.Disks = append(tmpl.Spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: v.Name})
	}
	return tmpl
}
