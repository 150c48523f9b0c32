package env

import (
	"bufio"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// logTailLines is how much of the controllers' log a failed test prints: enough
// to see the last reconciles of every controller, short enough to read in CI.
const logTailLines = 300

// controllerLog is the log file every manager of a zone writes to, kept in the
// zone's directory (which the harness keeps after a failure). A failed test
// prints its tail, since CI shows the test output but not the directory.
type controllerLog struct {
	path string
	once sync.Once
	file *os.File
	err  error
}

// Logger returns a logger for one in-process component of the zone, named after
// it, writing to the zone's controllers.log.
func (e *Env) Logger(t testing.TB, name string) logr.Logger {
	e.log.once.Do(func() {
		e.log.path = filepath.Join(e.Zone.Dir, "controllers.log")
		e.log.file, e.log.err = os.Create(e.log.path)
		if e.log.err != nil {
			return
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("last %d lines of %s:\n%s", logTailLines, e.log.path, tail(e.log.path, logTailLines))
			}
		})
	})
	if e.log.err != nil {
		t.Logf("controller logs discarded: %v", e.log.err)
		return logr.Discard()
	}
	return zap.New(zap.WriteTo(e.log.file), zap.UseDevMode(true)).WithName(name)
}

// TailOnFailure prints the last lines of a log file when the test has failed:
// for a process of the test whose output CI would not show otherwise.
func TailOnFailure(t testing.TB, path string) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last %d lines of %s:\n%s", logTailLines, path, tail(path, logTailLines))
		}
	})
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	ring := make([]string, 0, n)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if len(ring) == n {
			ring = ring[1:]
		}
		ring = append(ring, sc.Text())
	}
	out := ""
	for _, l := range ring {
		out += l + "\n"
	}
	return out
}
