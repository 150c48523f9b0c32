package nodeagent

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/drbd"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// statusReader answers `drbdsetup status` with out, or fails with err, and
// counts the calls.
type statusReader struct {
	out   string
	err   error
	calls int
}

func (s *statusReader) Run(_ context.Context, _ string, args ...string) ([]byte, error) {
	s.calls++
	if strings.Join(args, " ") != "status --json --statistics" {
		return nil, errors.New("unexpected drbdsetup " + strings.Join(args, " "))
	}
	return []byte(s.out), s.err
}

func (s *statusReader) Start(context.Context, string, ...string) (io.ReadCloser, func() error, error) {
	return nil, nil, errors.New("not used")
}

// Two resources on the node: the agent's (protocol A, 24 sectors in flight,
// congested, 8 KiB out of sync on volume 1) and one of another tool.
const figuresStatus = `[
{"name": "vm-db", "node-id": 0, "role": "Primary", "devices": [],
 "connections": [{"peer-node-id": 1, "name": "dr-1", "connection-state": "Connected", "congested": true,
   "peer-role": "Secondary", "ap-in-flight": 24, "rs-in-flight": 0,
   "peer_devices": [{"volume": 0, "replication-state": "Established", "peer-disk-state": "UpToDate", "out-of-sync": 0},
                    {"volume": 1, "replication-state": "Established", "peer-disk-state": "UpToDate", "out-of-sync": 8}]}]},
{"name": "someone-else", "node-id": 0, "role": "Primary", "devices": [],
 "connections": [{"peer-node-id": 1, "name": "x", "connection-state": "Connected", "ap-in-flight": 99, "peer_devices": []}]}
]`

func replica(name, node string) *srv1alpha1.DRBDResource {
	return &srv1alpha1.DRBDResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: "prod-pg"}},
		Spec: srv1alpha1.DRBDResourceSpec{NodeName: node, NodeID: 0, Protocol: srv1alpha1.ProtocolA,
			Peers: []srv1alpha1.DRBDPeer{{NodeName: "dr-worker-1", NodeID: 1}}},
	}
}

func newFigures(exec drbd.Executor, replicas ...*srv1alpha1.DRBDResource) *figures {
	b := fake.NewClientBuilder().WithScheme(scheme.New())
	for _, r := range replicas {
		b = b.WithObjects(r)
	}
	return &figures{node: "primary-worker-1", adm: &drbd.Adm{Exec: exec, DrbdsetupPath: "drbdsetup"}, replicas: b.Build(), log: logr.Discard()}
}

// TestFiguresExportTheLiveReading: a scrape reads DRBD's figures and exports
// in-flight bytes (sectors times 512), the congested flag and out-of-sync
// bytes per volume of the agent's own replicas, named by the peer's node;
// another tool's resource and another node's replica are left out.
func TestFiguresExportTheLiveReading(t *testing.T) {
	exec := &statusReader{out: figuresStatus}
	f := newFigures(exec, replica("vm-db", "primary-worker-1"), replica("vm-web", "primary-worker-2"))
	labels := `node="primary-worker-1",peer="dr-worker-1",protection_group="prod-pg",protocol="A",vm="db",vm_namespace="apps"`
	want := `
# HELP siterecovery_drbd_congested 1 while DRBD flags the connection congested: its send buffer is over four fifths full, and under protocol A the VM's next writes wait for the link.
# TYPE siterecovery_drbd_congested gauge
siterecovery_drbd_congested{` + labels + `} 1
# HELP siterecovery_drbd_in_flight_bytes Application writes sent to the peer that it has not confirmed (DRBD's ap-in-flight). Under protocol A the VM saw these writes complete: an unplanned failover now would lose them.
# TYPE siterecovery_drbd_in_flight_bytes gauge
siterecovery_drbd_in_flight_bytes{` + labels + `} 12288
# HELP siterecovery_drbd_out_of_sync_bytes Bytes of the volume marked out of sync towards the peer (DRBD's out-of-sync), read live.
# TYPE siterecovery_drbd_out_of_sync_bytes gauge
siterecovery_drbd_out_of_sync_bytes{` + labels + `,volume="0"} 0
siterecovery_drbd_out_of_sync_bytes{` + labels + `,volume="1"} 8192
# HELP siterecovery_drbd_status_read_failures_total Scrapes whose reading of DRBD's figures (drbdsetup status) failed or timed out; they carry no DRBD series.
# TYPE siterecovery_drbd_status_read_failures_total counter
siterecovery_drbd_status_read_failures_total{node="primary-worker-1"} 0
`
	require.NoError(t, testutil.CollectAndCompare(f, strings.NewReader(want)))
	require.Equal(t, 1, exec.calls, "one reading per scrape")
}

// TestFiguresOfAFailedReadingAreAbsent: when drbdsetup fails the scrape
// carries no DRBD series (a gap, not a stale or zero figure) and the
// failure counter grows; a node without replicas never runs drbdsetup.
func TestFiguresOfAFailedReadingAreAbsent(t *testing.T) {
	exec := &statusReader{err: errors.New("drbdsetup: exit status 20")}
	f := newFigures(exec, replica("vm-db", "primary-worker-1"))
	for range 2 {
		require.Equal(t, 1, testutil.CollectAndCount(f))
	}
	require.Equal(t, 2, exec.calls)
	require.NoError(t, testutil.CollectAndCompare(f, strings.NewReader(`
# HELP siterecovery_drbd_status_read_failures_total Scrapes whose reading of DRBD's figures (drbdsetup status) failed or timed out; they carry no DRBD series.
# TYPE siterecovery_drbd_status_read_failures_total counter
siterecovery_drbd_status_read_failures_total{node="primary-worker-1"} 3
`), MetricDRBDStatusReadFailures))

	idle := &statusReader{out: figuresStatus}
	require.Equal(t, 1, testutil.CollectAndCount(newFigures(idle, replica("vm-web", "primary-worker-2"))))
	require.Zero(t, idle.calls, "no replica on the node, nothing to read")
}
