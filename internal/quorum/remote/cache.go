package remote

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ClusterCache is what a quorum controller uses to reach the workload clusters:
// the Manager in quorum-manager, remote/fake in unit tests.
type ClusterCache interface {
	// Get returns key's cached reader and direct client, or an error wrapping
	// ErrNotConnected while it has no connection or its cache has not synced.
	Get(key Key) (*Remote, error)
	// Health is key's reachability, with a reason; NotConnected when it has no
	// connection.
	Health(key Key) Health
	// Source returns the controller's source of remote events: every add,
	// update and delete of the kinds of ev on every cluster, and each change
	// of a cluster's reachability, mapped to requests. Each kind is watched
	// once per cluster and controller, on the clusters connected now and
	// later; calling Source again with the same controller name returns the
	// same source, with any new kinds added.
	Source(controller string, ev Events) source.Source
}

// Connector is a ClusterCache whose connections can be managed: the zone
// controller connects the clusters of each zone from their kubeconfig Secrets.
type Connector interface {
	ClusterCache
	// Connect makes sure key has a connection built from kubeconfig. It is
	// cheap when nothing changed; a changed kubeconfig replaces the connection.
	Connect(ctx context.Context, key Key, kubeconfig []byte, limits Limits) error
	// Disconnect stops and forgets key's connection.
	Disconnect(key Key)
	// Clusters returns the keys of every connection of a zone.
	Clusters(namespace, zone string) []Key
}

var _ Connector = &Manager{}
