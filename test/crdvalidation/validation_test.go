package crdvalidation

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// crdCase is one kind's valid example and the invalid ones it must reject.
type crdCase struct {
	kind    string
	valid   string
	invalid []invalidCase
}

// invalidCase is a manifest the API server must reject with every wantMsg
// fragment in its message, so that the user learns which field to fix and how.
type invalidCase struct {
	name    string
	yaml    string
	wantMsg []string
}

const testNamespace = "dr-production"

func TestCRDValidation(t *testing.T) {
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, "quorum")
	c := zone.Clusters["quorum"].Client
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, namespace(testNamespace)))

	all := append(append(append([]crdCase{}, protectionCases...), siterecoveryCases...), ramenCases...)
	kinds := map[string]bool{}
	for _, tc := range all {
		kinds[tc.kind] = true
		t.Run(tc.kind, func(t *testing.T) {
			require.GreaterOrEqual(t, len(tc.invalid), 3, "every CRD needs at least three invalid examples")
			t.Run("valid", func(t *testing.T) {
				obj := decode(t, tc.valid)
				require.NoError(t, c.Create(ctx, obj), "the valid example must be accepted")
			})
			for _, bad := range tc.invalid {
				t.Run(bad.name, func(t *testing.T) {
					err := c.Create(ctx, decode(t, bad.yaml))
					require.Error(t, err, "the API server accepted an invalid %s", tc.kind)
					require.True(t, apierrors.IsInvalid(err), "want an Invalid error, got %v", err)
					for _, want := range bad.wantMsg {
						require.Contains(t, err.Error(), want)
					}
				})
			}
		})
	}
	// Every CRD the charts install has examples here.
	for _, k := range []string{"ProtectionZone", "ProtectionGroup", "ProtectionRequest", "FailoverRequest", "TestFailover",
		"ReplicationGroupStatus", "RPOEvent", "DRBDResource", "DRBDAllocation", "DRPolicy", "DRPlacementControl",
		"VolumeReplicationGroup", "ReplicationGroupSource", "ReplicationGroupDestination"} {
		require.True(t, kinds[k], "no validation examples for %s", k)
	}

	t.Run("immutable specs", func(t *testing.T) {
		for _, u := range []struct{ kind, name, path, value, want string }{
			{"FailoverRequest", "planned-failover-prod", "targetCluster", "primary-cluster", "spec is immutable; create a new FailoverRequest"},
			{"ProtectionZone", "production", "storageBackend", "Offloaded", "storageBackend is immutable"},
			{"ProtectionRequest", "protect-db", "virtualMachine", "", "virtualMachine is immutable"},
		} {
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion("siterecovery.trilio.io/v1alpha1")
			obj.SetKind(u.kind)
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: u.name}, obj))
			if u.value == "" {
				require.NoError(t, unstructured.SetNestedField(obj.Object, "other-vm", "spec", u.path, "name"))
			} else {
				require.NoError(t, unstructured.SetNestedField(obj.Object, u.value, "spec", u.path))
			}
			err := c.Update(ctx, obj)
			require.Error(t, err, "%s spec.%s must be immutable", u.kind, u.path)
			require.Contains(t, err.Error(), u.want)
		}
	})
}

// TestFailoverRequestDefaults checks what a user who writes the minimum gets.
func TestFailoverRequestDefaults(t *testing.T) {
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, "quorum")
	c := zone.Clusters["quorum"].Client
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, namespace(testNamespace)))
	obj := decode(t, `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: FailoverRequest
metadata: {name: minimal}
spec: {protectionGroupRef: {name: pg}, targetCluster: dr-cluster}
`)
	require.NoError(t, c.Create(ctx, obj))
	spec := obj.Object["spec"].(map[string]any)
	require.Equal(t, "planned", spec["failoverType"])
	require.EqualValues(t, 300, spec["drainTimeoutSeconds"])
	require.EqualValues(t, 600, spec["batchBootTimeoutSeconds"])
}

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(strings.TrimSpace(manifest)), &obj.Object))
	obj.SetNamespace(testNamespace)
	return obj
}

func namespace(name string) *unstructured.Unstructured {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	return ns
}
