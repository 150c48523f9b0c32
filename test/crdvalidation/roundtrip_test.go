package crdvalidation

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// peerClassExample is a DRPolicy status with the peer classes the Offloaded backend documents.
const peerClassExample = `
peerClasses:
  - clusterIDs: [cl-id-1, cl-id-2]
    storageClassName: sc-block
    storageID: [sid-1, sid-2]
    groupreplicationID: replication-group-01
    grouping: true
    offloaded: true
    global: true
`

// TestPeerClassStatusRoundTrip writes the spec's PeerClass example as a DRPolicy
// status and reads it back unchanged: no field is pruned or renamed.
func TestPeerClassStatusRoundTrip(t *testing.T) {
	zone := harness.Start(t, harness.Options{CRDDirectoryPaths: harness.DefaultCRDPaths(), Scheme: scheme.New()}, "quorum")
	c := zone.Clusters["quorum"].Client
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, namespace(testNamespace)))

	policy := decode(t, `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPolicy
metadata: {name: offloaded}
spec: {drClusters: [cl-id-1, cl-id-2], schedulingInterval: 0m}
`)
	require.NoError(t, c.Create(ctx, policy))

	var want map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(peerClassExample), &want))
	policy.Object["status"] = want
	require.NoError(t, c.Status().Update(ctx, policy))

	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(policy.GroupVersionKind())
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(policy), got))
	require.Equal(t, want, got.Object["status"])
}
