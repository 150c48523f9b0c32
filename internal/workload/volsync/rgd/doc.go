// Package rgd reconciles ReplicationGroupDestinations: the secondary half of a
// VolSync consistency group. It keeps one VolSync ReplicationDestination per
// protected PVC, named like the PVC, which receives into a PVC of the same name
// and snapshots it after each sync (copyMethod Snapshot), so that a sync
// interrupted midway never replaces the last complete image. When every
// destination has received a newer image than the recorded one, the new images
// are recorded together in status.latestImages: the group's point in time that
// a failover restores. With the enable-diff annotation set to exactly "true"
// the destinations use the External spec of the ceph-volsync-plugin.
package rgd
