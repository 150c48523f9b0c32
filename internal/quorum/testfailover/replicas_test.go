package testfailover

import (
	"testing"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// replica is a DR replica of two volumes, as the protection flow writes its
// spec, with the given local disk states and volume 1 syncing from the primary.
func replica(disk0, disk1 string) *srv1alpha1.DRBDResource {
	return &srv1alpha1.DRBDResource{
		Spec: srv1alpha1.DRBDResourceSpec{NodeName: "dr-worker-1", Volumes: []srv1alpha1.DRBDVolume{
			{Number: 0, Disk: "root", BackingPVC: &srv1alpha1.LocalObjectReference{Name: "db-root"}},
			{Number: 1, Disk: "data", BackingPVC: &srv1alpha1.LocalObjectReference{Name: "db-data"}},
		}},
		Status: srv1alpha1.DRBDResourceStatus{
			Volumes: []srv1alpha1.DRBDVolumeStatus{{Number: 0, DiskState: disk0}, {Number: 1, DiskState: disk1}},
			Peers: []srv1alpha1.DRBDPeerStatus{{NodeName: "primary-worker-1", ConnectionState: "Connected", Volumes: []srv1alpha1.DRBDPeerVolumeStatus{
				{Number: 0, ReplicationState: "Established", PeerDiskState: "UpToDate", PercentInSync: "100.00"},
				{Number: 1, ReplicationState: "SyncTarget", PeerDiskState: "UpToDate", PercentInSync: "42.10"},
			}}},
		},
	}
}

// Only an UpToDate local disk may be snapshotted; the reason names the volume,
// its PVC and state, and how far its sync is.
func TestNotUpToDate(t *testing.T) {
	for _, c := range []struct {
		name          string
		d             *srv1alpha1.DRBDResource
		claim, volume string
		want          string
	}{
		{"up to date", replica("UpToDate", "Inconsistent"), "db-root", "root", ""},
		{"sync target", replica("UpToDate", "Inconsistent"), "db-data", "data",
			"volume 1 (PVC db-data) is Inconsistent (SyncTarget from primary-worker-1, 42.10% in sync)"},
		{"found by disk name", replica("UpToDate", "Outdated"), "other-pvc", "data",
			"volume 1 (PVC other-pvc) is Outdated (SyncTarget from primary-worker-1, 42.10% in sync)"},
		{"consistent", replica("Consistent", "UpToDate"), "db-root", "root", "volume 0 (PVC db-root) is Consistent"},
		{"not reported", replica("", "UpToDate"), "db-root", "root",
			"volume 0 (PVC db-root) has no disk state reported yet (is the drbd-node-agent of node dr-worker-1 running?)"},
		{"unknown volume: every volume counts", replica("UpToDate", "Inconsistent"), "x", "y",
			"volume 1 (PVC x) is Inconsistent (SyncTarget from primary-worker-1, 42.10% in sync)"},
		{"unknown volume, all up to date", replica("UpToDate", "UpToDate"), "x", "y", ""},
	} {
		if got := notUpToDate(c.d, c.claim, c.volume); got != c.want {
			t.Errorf("%s: notUpToDate = %q, want %q", c.name, got, c.want)
		}
	}

	d := replica("Inconsistent", "UpToDate")
	d.Status.Peers[0].ConnectionState = "Connecting"
	if got, want := notUpToDate(d, "db-root", "root"), "volume 0 (PVC db-root) is Inconsistent (Connecting to primary-worker-1)"; got != want {
		t.Errorf("disconnected: %q, want %q", got, want)
	}
	d.Spec.Volumes = nil
	if got := notUpToDate(d, "db-root", "root"); got != "has no volumes" {
		t.Errorf("no volumes: %q", got)
	}
}
