package monitor

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// errCacheSyncing defers an evaluation until a connected cluster's cache synced.
var errCacheSyncing = errors.New("remote cache not synced yet")

// readSides fills in.Active and in.Replicas from the remote caches of the
// group's zone. A cluster that is not connected, not synced or unreachable is
// unreadable: its cache may be stale, so the other side's view is used.
func (r *Reconciler) readSides(ctx context.Context, group *srv1alpha1.ProtectionGroup, in *Input) error {
	if group.Spec.ZoneRef == nil {
		return nil
	}
	zone := &srv1alpha1.ProtectionZone{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: group.Namespace, Name: group.Spec.ZoneRef.Name}, zone); err != nil {
		return client.IgnoreNotFound(err)
	}
	active := group.Spec.ActiveCluster
	if active == "" {
		for _, c := range zone.Spec.Clusters {
			if c.Role == srv1alpha1.ClusterRolePrimary {
				active = c.Name
			}
		}
	}
	for _, c := range zone.Spec.Clusters {
		side, err := r.readSide(ctx, remote.Key{Namespace: group.Namespace, Zone: zone.Name, Cluster: c.Name}, group.Name)
		if err != nil {
			return err
		}
		if c.Name == active {
			in.Active = side
		} else {
			in.Replicas = append(in.Replicas, side)
		}
	}
	return nil
}

func (r *Reconciler) readSide(ctx context.Context, key remote.Key, group string) (Side, error) {
	side := Side{Cluster: key.Cluster}
	rem, err := r.Remote.Get(key)
	if err != nil {
		if r.Remote.Health(key).Connected() {
			// Connected but its cache has not synced yet (a start or a new
			// kubeconfig): wait rather than report the cluster unknown.
			return side, errCacheSyncing
		}
		return side, nil
	}
	if r.Remote.Health(key).Unreachable() {
		return side, nil
	}
	return listSide(ctx, rem.Cached, key, group)
}

// listSide reads a group's DRBDResources from one cluster's cache, without
// copying them: Aggregate only reads.
func listSide(ctx context.Context, cache client.Reader, key remote.Key, group string) (Side, error) {
	side := Side{Cluster: key.Cluster}
	list := &srv1alpha1.DRBDResourceList{}
	if err := cache.List(ctx, list, client.MatchingLabels{srv1alpha1.ProtectionGroupLabel: group}, client.UnsafeDisableDeepCopy); err != nil {
		return side, fmt.Errorf("listing DRBDResources of group %s on %s: %w", group, key.Cluster, err)
	}
	side.Readable = true
	side.Resources = make(map[types.NamespacedName]*srv1alpha1.DRBDResource, len(list.Items))
	for i := range list.Items {
		d := &list.Items[i]
		if ns := d.Labels[srv1alpha1.DRNamespaceLabel]; ns != "" && ns != key.Namespace {
			continue // another DR namespace's group of the same name
		}
		side.Resources[client.ObjectKeyFromObject(d)] = d
	}
	return side, nil
}

// openEvent is the RPOEvent the status names as the ongoing breach, if any.
func (r *Reconciler) openEvent(ctx context.Context, rgs *srv1alpha1.ReplicationGroupStatus) (*srv1alpha1.RPOEvent, error) {
	if rgs.Status.ActiveRPOEvent == "" {
		return nil, nil
	}
	ev := &srv1alpha1.RPOEvent{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: rgs.Namespace, Name: rgs.Status.ActiveRPOEvent}, ev); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return ev, nil
}
