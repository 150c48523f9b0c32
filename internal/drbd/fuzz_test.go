package drbd

import (
	"os"
	"path/filepath"
	"testing"
)

func FuzzParseEvent(f *testing.F) {
	files, _ := filepath.Glob("testdata/events2_*.txt")
	for _, file := range files {
		for _, line := range readLines(f, file) {
			f.Add(line)
		}
	}
	f.Add("exists -")
	f.Add("change peer-device name:r peer-node-id:-1 volume:99999999999999999999 done:1e400")
	f.Fuzz(func(t *testing.T, line string) {
		ev, err := ParseEvent(line)
		if err != nil {
			return
		}
		// Whatever parses must be safe to fold into a Tracker.
		tr := NewTracker()
		tr.Apply(ev)
		_ = tr.Snapshot()
	})
}

func FuzzParseStatusJSON(f *testing.F) {
	files, _ := filepath.Glob("testdata/status_*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`[{"name":"r","connections":[{"peer_devices":[{"percent-resync-done":null}]}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := StatusFromJSON(data)
		if err != nil {
			return
		}
		for i := range st {
			_ = st[i].LacksQuorum()
			_ = st[i].Clone()
		}
	})
}
