package harness_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/harness"
)

// waitFor polls cond every 50 ms until it returns nil or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func restrictedContainer(name string) corev1.Container {
	return corev1.Container{Name: name, Image: "registry.k8s.io/pause:3.10",
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
	}
}

// TestControlPlane checks that a ControlPlane cluster behaves as a kubeadm
// cluster does where the product depends on it: nodes in two zones, the
// scheduler placing by capacity and spread, kwok running and deleting pods,
// the garbage collector, pvc-protection and the namespace controller, the
// ServiceAccount controller, and the admission plugins.
func TestControlPlane(t *testing.T) {
	z := harness.Start(t, harness.Options{Scheme: testScheme(t), ControlPlane: true}, harness.Primary)
	c := z.Clusters[harness.Primary].Client
	ctx := t.Context()

	nodes := &corev1.NodeList{}
	require.NoError(t, c.List(ctx, nodes))
	zones := map[string]int{}
	for _, n := range nodes.Items {
		zones[n.Labels[corev1.LabelTopologyZone]]++
		assert.Equal(t, "16", n.Status.Allocatable.Cpu().String(), "node %s keeps the capacity it registered with", n.Name)
	}
	assert.Len(t, nodes.Items, 3)
	assert.Len(t, zones, 2, "nodes in two zones")

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}
	require.NoError(t, c.Create(ctx, ns))

	t.Run("the scheduler spreads and fits, kwok runs the pods", func(t *testing.T) {
		labels := map[string]string{"app": "web"}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
						WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
					Containers: []corev1.Container{restrictedContainer("web")}}}}}
		require.NoError(t, c.Create(ctx, dep))
		waitFor(t, time.Minute, "three Running pods on three nodes", func() error {
			pods := &corev1.PodList{}
			if err := c.List(ctx, pods, client.InNamespace("apps"), client.MatchingLabels(labels)); err != nil {
				return err
			}
			on := map[string]bool{}
			for _, p := range pods.Items {
				if p.Status.Phase != corev1.PodRunning {
					return fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
				}
				on[p.Spec.NodeName] = true
			}
			if len(pods.Items) != 3 || len(on) != 3 {
				return fmt.Errorf("%d pods on %d nodes", len(pods.Items), len(on))
			}
			return nil
		})

		// Each node has 16 CPUs, 4 of them taken: a pod asking 13 fits nowhere.
		big := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "too-big"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{restrictedContainer("big")}}}
		big.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("13")
		require.NoError(t, c.Create(ctx, big))
		waitFor(t, time.Minute, "the scheduler to report the pod unschedulable", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(big), big); err != nil {
				return err
			}
			for _, cond := range big.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable {
					return nil
				}
			}
			return fmt.Errorf("conditions %v", big.Status.Conditions)
		})

		require.NoError(t, c.Delete(ctx, dep))
		waitFor(t, time.Minute, "the garbage collector to delete the ReplicaSet's pods", func() error {
			pods := &corev1.PodList{}
			if err := c.List(ctx, pods, client.InNamespace("apps"), client.MatchingLabels(labels)); err != nil {
				return err
			}
			if len(pods.Items) > 0 {
				return fmt.Errorf("%d pods left", len(pods.Items))
			}
			return nil
		})
	})

	t.Run("PodSecurity enforces the namespace's level", func(t *testing.T) {
		root := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "root"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		err := c.Create(ctx, root)
		require.True(t, apierrors.IsForbidden(err), "a pod that may run as root is refused in a restricted namespace: %v", err)
		assert.Contains(t, err.Error(), "violates PodSecurity \"restricted:latest\"")

		hostNet := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "host-network"},
			Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		err = c.Create(ctx, hostNet)
		require.True(t, apierrors.IsForbidden(err), "an unlabelled namespace enforces baseline: %v", err)
	})

	t.Run("pvc-protection holds a claim while a pod uses it", func(t *testing.T) {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		require.NoError(t, c.Create(ctx, pvc))
		user := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "user"},
			Spec: corev1.PodSpec{NodeName: "primary-worker-a1", Containers: []corev1.Container{restrictedContainer("c")},
				Volumes: []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
		require.NoError(t, c.Create(ctx, user))
		require.NoError(t, c.Delete(ctx, pvc))
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc))
		assert.Contains(t, pvc.Finalizers, "kubernetes.io/pvc-protection")
		assert.NotNil(t, pvc.DeletionTimestamp)
		require.NoError(t, c.Delete(ctx, user))
		waitFor(t, time.Minute, "the claim to go once its pod has", func() error {
			err := c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (finalizers %v): %w", pvc.Finalizers, err)
		})
	})

	t.Run("an owner reference that blocks deletion needs the owner's finalizers right", func(t *testing.T) {
		owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "owner"}}
		require.NoError(t, c.Create(ctx, owner))
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "writer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "create"}}}}
		require.NoError(t, c.Create(ctx, role))
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "writer"}}
		require.NoError(t, c.Create(ctx, sa))
		require.NoError(t, c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "writer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "writer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "apps", Name: "writer"}}}))
		token, err := harness.ServiceAccountToken(ctx, c, "apps", "writer", time.Hour)
		require.NoError(t, err)
		cfg := rest.AnonymousClientConfig(z.Clusters[harness.Primary].Config)
		cfg.BearerToken = token
		writer, err := client.New(cfg, client.Options{Scheme: testScheme(t)})
		require.NoError(t, err)

		child := func(name string) *corev1.Secret {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true)}}}}
		}
		err = writer.Create(ctx, child("refused"))
		require.True(t, apierrors.IsForbidden(err), "without update on configmaps/finalizers: %v", err)
		assert.Contains(t, err.Error(), "cannot set blockOwnerDeletion")

		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps/finalizers"}, Verbs: []string{"update"}})
		require.NoError(t, c.Update(ctx, role))
		waitFor(t, 10*time.Second, "the finalizers right to count", func() error { return writer.Create(ctx, child("accepted")) })
	})

	t.Run("the namespace controller empties and removes a namespace", func(t *testing.T) {
		require.NoError(t, c.Delete(ctx, ns))
		waitFor(t, 2*time.Minute, "namespace apps to go", func() error {
			err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("phase %s: %w", ns.Status.Phase, err)
		})
	})
}

// TestBareAPIServerAdmission checks that a bare API server, too, refuses
// what PodSecurity and OwnerReferencesPermissionEnforcement refuse, and that
// the plugins it runs without are only those with a written reason.
func TestBareAPIServerAdmission(t *testing.T) {
	assert.Equal(t, []string{"ServiceAccount", "StorageObjectInUseProtection", "TaintNodesByCondition"}, harness.BareAPIServerDisabledPlugins())
	z := harness.Start(t, harness.Options{Scheme: testScheme(t)}, harness.Primary)
	c := z.Clusters[harness.Primary].Client
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	hostNet := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "host-network"},
		Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	err := c.Create(ctx, hostNet)
	require.True(t, apierrors.IsForbidden(err), "baseline is enforced by default: %v", err)
	assert.Contains(t, err.Error(), "host namespaces")
}
