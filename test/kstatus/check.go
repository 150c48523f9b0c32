package kstatus

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/env"
)

// Compute reads obj as kstatus does (status.Compute on its unstructured
// form), as kubectl wait, Argo CD's health checks and Flux's dependsOn read
// it.
func Compute(t testing.TB, obj client.Object) *status.Result {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	res, err := status.Compute(&unstructured.Unstructured{Object: u})
	require.NoError(t, err)
	return res
}

// Wait reads obj until kstatus says want, within timeout. Flow tests call it
// at the points where a user's tooling would look: a kind read as anything
// else there fails the test with kstatus' message.
func Wait(t testing.TB, c client.Client, obj client.Object, key client.ObjectKey, want status.Status, timeout time.Duration) {
	t.Helper()
	env.Eventually(t, timeout, fmt.Sprintf("%T %s reads %s to kstatus", obj, key.Name, want), func() error {
		if err := c.Get(context.Background(), key, obj); err != nil {
			return err
		}
		if res := Compute(t, obj); res.Status != want {
			return fmt.Errorf("%s (%s)", res.Status, res.Message)
		}
		return nil
	})
}
