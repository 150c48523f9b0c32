package pgsync_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/pgsync"
	"github.com/siterecovery/siterecovery/test/env"
)

// kubevirtCompanion is a namespaced KubeVirt instancetype or preference of
// the apps namespace, as unstructured (the product reads and writes them so).
func kubevirtCompanion(kind srv1alpha1.CompanionKind, name string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(kind.GroupVersionKind())
	u.SetNamespace(env.AppNS)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// instancetypeSpec is a VirtualMachineInstancetype's spec; cpu.guest and
// memory.guest are the fields its schema requires.
func instancetypeSpec(memory string) map[string]any {
	return map[string]any{"cpu": map[string]any{"guest": int64(2)}, "memory": map[string]any{"guest": memory}}
}

// getKubevirtCompanion reads an instancetype or preference of the apps
// namespace.
func getKubevirtCompanion(ctx context.Context, c client.Client, kind srv1alpha1.CompanionKind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind.GroupVersionKind())
	return u, c.Get(ctx, companionKey(name), u)
}

// requireKubevirtCopy checks a copy on the DR cluster: pg-sync's, with the
// source's spec field at path equal to want.
func requireKubevirtCopy(t *testing.T, dr client.Client, kind srv1alpha1.CompanionKind, name string, want any, path ...string) {
	t.Helper()
	u, err := getKubevirtCompanion(context.Background(), dr, kind, name)
	require.NoError(t, err)
	require.Equal(t, pgsync.ControllerName, u.GetLabels()[pgsync.CreatedByLabel])
	got, _, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	require.NoError(t, err)
	require.Equal(t, want, got, "%s %s: %v", kind, name, path)
}

// kubevirtCopyHas polls until the DR copy's field at path is want.
func kubevirtCopyHas(dr client.Client, kind srv1alpha1.CompanionKind, name string, want any, path ...string) func() error {
	return func() error {
		u, err := getKubevirtCompanion(context.Background(), dr, kind, name)
		if err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...); got != want {
			return fmt.Errorf("%s %s %v: %v, want %v", kind, name, path, got, want)
		}
		return nil
	}
}
