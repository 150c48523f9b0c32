package drain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/freeze/drain"
)

func replica(answered string, inFlight, oos, pending int64, peerDisk string) *srv1alpha1.DRBDResource {
	return &srv1alpha1.DRBDResource{Status: srv1alpha1.DRBDResourceStatus{StatusAnswered: answered, Peers: []srv1alpha1.DRBDPeerStatus{{
		NodeName: "dr-node", ConnectionState: "Connected", APInFlightBytes: inFlight,
		Volumes: []srv1alpha1.DRBDPeerVolumeStatus{{Number: 0, ReplicationState: "Established", PeerDiskState: peerDisk, OutOfSyncBytes: oos, Pending: pending}},
	}}}}
}

func TestLacking(t *testing.T) {
	a, c := srv1alpha1.ProtocolA, srv1alpha1.ProtocolC
	for name, tc := range map[string]struct {
		res      *srv1alpha1.DRBDResource
		protocol srv1alpha1.ReplicationProtocol
		want     string
	}{
		"protocol C, peer UpToDate":                 {replica("", 0, 0, 0, "UpToDate"), c, ""},
		"protocol C ignores in-flight figures":      {replica("", 4096, 0, 1, "UpToDate"), c, ""},
		"protocol C, peer behind":                   {replica("", 0, 8192, 0, "Inconsistent"), c, "volume 0 Established/Inconsistent, volume 0 8192 bytes out of sync"},
		"protocol A, drained":                       {replica("t1", 0, 0, 0, "UpToDate"), a, ""},
		"protocol A, writes in flight":              {replica("t1", 12288, 0, 0, "UpToDate"), a, "12288 bytes of writes in flight"},
		"protocol A, pending":                       {replica("t1", 0, 0, 2, "UpToDate"), a, "volume 0 2 requests pending"},
		"protocol A, figures not from this reading": {replica("t0", 0, 0, 0, "UpToDate"), a, "waiting for a fresh reading of DRBD's in-flight figures"},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, drain.Lacking(tc.res, "dr-node", tc.protocol, "t1"))
		})
	}
	gone := replica("t1", 0, 0, 0, "UpToDate")
	gone.Status.Peers[0].ConnectionState = "Connecting"
	require.Equal(t, "Connecting towards dr-node", drain.Lacking(gone, "dr-node", a, "t1"))
	require.Equal(t, "no connection to other reported", drain.Lacking(gone, "other", a, "t1"))
}
