package remote

import (
	"errors"
	"fmt"
)

// ErrUnreachable is wrapped by Answering's error for a cluster the prober has
// found not to answer.
var ErrUnreachable = errors.New("cluster unreachable")

// Answering returns key's connection only when it may be acted on: connected,
// synced, and not found unreachable by the prober. A connection outlives its
// API server, so Get alone does not say the cluster answers: its cache keeps
// serving what it saw last. The error wraps ErrNotConnected or ErrUnreachable
// and carries the prober's last error, which names the server, never a
// credential.
func Answering(cc ClusterCache, key Key) (*Remote, error) {
	rc, err := cc.Get(key)
	if err != nil {
		return nil, err
	}
	if h := cc.Health(key); h.Unreachable() {
		if h.Err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, key.Cluster, h.Err)
		}
		return nil, fmt.Errorf("%w: %s: its API server does not answer", ErrUnreachable, key.Cluster)
	}
	return rc, nil
}
