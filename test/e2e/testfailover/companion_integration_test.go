package testfailover_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/testfailover"
	"github.com/siterecovery/siterecovery/test/env"
)

// setCompanions sets the quorum group's spec.companions and removes them
// again when the test ends.
func (z *zone) setCompanions(companions *srv1alpha1.CompanionObjects) {
	z.withGroupSpec(func(s *srv1alpha1.ProtectionGroupSpec) { s.Companions = companions },
		func(s *srv1alpha1.ProtectionGroupSpec) { s.Companions = nil })
}

// testCompanionsInIsolatedNamespace: the group's companions (a ConfigMap, a
// Service and a KubeVirt instancetype, on a zone with env.Options.Instancetypes),
// which pg-sync keeps on the DR cluster, are in the isolated namespace before
// its first test VM starts, labelled as the test's (the Service headless), and
// go with the namespace when the test ends.
func (z *zone) testCompanionsInIsolatedNamespace(t *testing.T) {
	z.create(env.Primary, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "app-config",
		Labels: map[string]string{"tier": "db"}}, Data: map[string]string{"DB_HOST": "db"}})
	z.create(env.Primary, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "db"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "db"},
			Ports: []corev1.ServicePort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}}}})
	size := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"cpu": map[string]any{"guest": int64(2)}, "memory": map[string]any{"guest": "2Gi"}}}}
	size.SetGroupVersionKind(srv1alpha1.CompanionInstancetype.GroupVersionKind())
	size.SetNamespace(env.AppNS)
	size.SetName("db-size")
	z.create(env.Primary, size)
	instancetype := func(namespace string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(srv1alpha1.CompanionInstancetype.GroupVersionKind())
		return u, z.Client(env.DR).Get(z.ctx, client.ObjectKey{Namespace: namespace, Name: "db-size"}, u)
	}
	z.setCompanions(&srv1alpha1.CompanionObjects{Objects: []srv1alpha1.CompanionSelector{
		{Kind: srv1alpha1.CompanionInstancetype, Namespace: env.AppNS, Name: "db-size"},
		{Kind: srv1alpha1.CompanionConfigMap, Namespace: env.AppNS, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}},
		{Kind: srv1alpha1.CompanionService, Namespace: env.AppNS, Name: "db"},
	}})
	dr := z.Client(env.DR)
	env.Eventually(t, timeout, "pg-sync's copies on the DR cluster", func() error {
		if err := dr.Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: "app-config"}, &corev1.ConfigMap{}); err != nil {
			return err
		}
		if _, err := instancetype(env.AppNS); err != nil {
			return err
		}
		return dr.Get(z.ctx, client.ObjectKey{Namespace: env.AppNS, Name: "db"}, &corev1.Service{})
	})

	z.setBootPlan(z.dbThenWeb(60))
	name := "companions"
	ns := "sr-test-" + name
	z.testFailover(name, env.DR, nil)
	tf := z.waitBoot(name, func(b *srv1alpha1.BootStatus) bool {
		return len(b.Stages) > 0 && b.Stages[0].Phase == srv1alpha1.StageStarting
	})
	cm := &corev1.ConfigMap{}
	require.NoError(t, dr.Get(z.ctx, client.ObjectKey{Namespace: ns, Name: "app-config"}, cm), "the ConfigMap is in the isolated namespace")
	require.Equal(t, "db", cm.Data["DB_HOST"])
	require.Equal(t, string(tf.UID), cm.Labels[testfailover.LabelUID])
	require.Empty(t, cm.Labels["siterecovery.trilio.io/created-by"], "the test's copy is not pg-sync's")
	svc := &corev1.Service{}
	require.NoError(t, dr.Get(z.ctx, client.ObjectKey{Namespace: ns, Name: "db"}, svc), "the Service is in the isolated namespace")
	require.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
	require.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "headless: nothing of the test is reachable from outside")
	require.Equal(t, int32(5432), svc.Spec.Ports[0].Port)
	it, err := instancetype(ns)
	require.NoError(t, err, "the instancetype is in the isolated namespace")
	require.Equal(t, string(tf.UID), it.GetLabels()[testfailover.LabelUID])
	memory, _, err := unstructured.NestedString(it.Object, "spec", "memory", "guest")
	require.NoError(t, err)
	require.Equal(t, "2Gi", memory)

	z.setAddress(ns, z.vms[0], "10.244.1.7")
	tf = z.waitPhase(name, srv1alpha1.TestFailoverSucceeded)
	z.assertLeavesNothing(tf)
	// The Service copy is deleted with the test's Services; the ConfigMap
	// with the isolated namespace, which assertLeavesNothing finds deleted
	// (the test API server runs no namespace controller to empty it).
}
