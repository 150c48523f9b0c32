package drbd

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseEventFields(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		check func(t *testing.T, ev Event)
	}{
		{"resource with promotion info",
			"exists resource name:r0 role:Primary suspended:no force-io-failures:no write-ordering:flush may_promote:no promotion_score:10102",
			func(t *testing.T, ev Event) {
				assert.Equal(t, KindExists, ev.Kind)
				assert.Equal(t, ObjectResource, ev.Object)
				assert.Equal(t, "r0", ev.Resource)
				assert.Equal(t, "Primary", ev.Role)
				assert.Equal(t, "no", ev.Suspended)
				assert.True(t, ev.Has(FieldMayPromote))
				assert.False(t, ev.MayPromote)
				assert.Equal(t, 10102, ev.PromotionScore)
				assert.False(t, ev.Has(FieldPeerRole))
			}},
		{"connection role is the peer role",
			"change connection name:r0 peer-node-id:1 conn-name:b connection:Connecting role:Unknown",
			func(t *testing.T, ev Event) {
				assert.Equal(t, 1, ev.PeerNodeID)
				assert.Equal(t, "b", ev.ConnName)
				assert.Equal(t, "Connecting", ev.Connection)
				assert.Equal(t, "Unknown", ev.PeerRole)
				assert.False(t, ev.Has(FieldRole))
			}},
		{"device statistics",
			"exists device name:r0 volume:0 minor:1000 backing_dev:/dev/vg/r0 disk:UpToDate client:no open:yes quorum:no size:1024 read:2 written:3",
			func(t *testing.T, ev Event) {
				assert.Equal(t, 0, ev.Volume)
				assert.Equal(t, 1000, ev.Minor)
				assert.Equal(t, "/dev/vg/r0", ev.BackingDev)
				assert.Equal(t, "UpToDate", ev.Disk)
				assert.True(t, ev.Has(FieldQuorum))
				assert.False(t, ev.Quorum)
				assert.True(t, ev.Open)
				assert.Equal(t, uint64(1024), ev.Size)
				assert.Equal(t, uint64(3), ev.Written)
			}},
		{"peer-device resync",
			"change peer-device name:r0 peer-node-id:1 conn-name:b volume:0 replication:SyncSource peer-disk:Inconsistent done:41.37 received:0 sent:9 out-of-sync:12296192 pending:1 unacked:4",
			func(t *testing.T, ev Event) {
				assert.Equal(t, "SyncSource", ev.Replication)
				assert.Equal(t, "Inconsistent", ev.PeerDisk)
				assert.InDelta(t, 41.37, ev.Done, 1e-9)
				assert.Equal(t, uint64(12296192), ev.OutOfSync)
				assert.Equal(t, uint64(1), ev.Pending)
				assert.Equal(t, uint64(4), ev.Unacked)
			}},
		{"max uint64 counter",
			"change peer-device name:r0 peer-node-id:1 conn-name:b volume:0 sent:18446744073709551615",
			func(t *testing.T, ev Event) { assert.Equal(t, ^uint64(0), ev.Sent) }},
		{"timestamps",
			"2024-05-14T09:12:01.118734+02:00 exists -",
			func(t *testing.T, ev Event) {
				assert.Equal(t, "2024-05-14T09:12:01.118734+02:00", ev.Timestamp)
				assert.True(t, ev.IsInitialDone())
			}},
		{"path endpoints keep their colons",
			"exists path name:r0 peer-node-id:1 conn-name:b local:ipv6:[fd00::1]:7000 peer:ipv6:[fd00::2]:7000 established:yes",
			func(t *testing.T, ev Event) {
				assert.Equal(t, "ipv6:[fd00::1]:7000", ev.Local)
				assert.Equal(t, "ipv6:[fd00::2]:7000", ev.Peer)
				assert.True(t, ev.Established)
			}},
		{"unknown keys ignored",
			"change resource name:r0 role:Secondary shiny-new-field:42 other:x",
			func(t *testing.T, ev Event) { assert.Equal(t, "Secondary", ev.Role) }},
		{"rename",
			"rename resource name:a new_name:b",
			func(t *testing.T, ev Event) { assert.Equal(t, "b", ev.NewName) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := ParseEvent(tt.line)
			require.NoError(t, err)
			tt.check(t, ev)
		})
	}
}

func TestParseEventErrors(t *testing.T) {
	for _, line := range []string{
		"",
		"   ",
		"bogus resource name:r0",
		"exists",
		"exists gizmo name:r0",
		"exists - extra",
		"exists resource role:Primary",
		"exists resource name:r0 justaword",
		"exists resource name:r0 :x",
		"change device name:r0 volume:x",
		"change device name:r0 minor:99999999999",
		"change resource name:r0 may_promote:maybe",
		"change peer-device name:r0 sent:18446744073709551616",
		"change peer-device name:r0 sent:-1",
		"change peer-device name:r0 done:NaN",
		"- skipped 3",
	} {
		_, err := ParseEvent(line)
		assert.Error(t, err, "line %q", line)
	}
}

// TestParseEventTestdata makes sure every captured sample parses.
func TestParseEventTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/events2_*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		for i, line := range readLines(t, f) {
			_, err := ParseEvent(line)
			assert.NoError(t, err, "%s:%d", f, i+1)
		}
	}
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	require.NoError(t, sc.Err())
	return lines
}

func BenchmarkParseEvent(b *testing.B) {
	var lines []string
	for _, f := range []string{"testdata/events2_connected.txt", "testdata/events2_resync.txt", "testdata/events2_disconnected.txt"} {
		lines = append(lines, readLines(b, f)...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ParseEvent(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
