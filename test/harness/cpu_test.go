package harness

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestSampleCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	self := fmt.Sprintf("%d", os.Getpid())
	before := SampleCPU()
	var key string
	for k := range before {
		if strings.HasSuffix(k, " "+self) {
			key = k
		}
	}
	if key == "" {
		t.Fatalf("the test process is missing from %v", before)
	}
	// Burn CPU until /proc shows it (its unit is 10 ms).
	x := 0
	for SampleCPU()[key] == before[key] {
		for i := range 1_000_000 {
			x += i
		}
	}
	_ = x
	if got := SampleCPU().Since(before); !strings.Contains(got, key) || !strings.HasPrefix(got, "CPU ") {
		t.Fatalf("Since = %q, want the test process in it", got)
	}
}

// playedCPU is a sampler whose process uses perInterval of CPU time for every
// quietInterval that passes, whatever the machine's load.
func playedCPU(perInterval time.Duration) func() CPUSample {
	start := time.Now()
	return func() CPUSample {
		intervals := float64(time.Since(start)) / float64(quietInterval)
		return CPUSample{"played 1": time.Duration(intervals * float64(perInterval))}
	}
}

func TestWaitQuiet(t *testing.T) {
	budget := time.Duration(float64(quietInterval) * quietShare * float64(runtime.NumCPU()))
	if waitQuiet(t.Context(), time.Second, playedCPU(2*budget)) {
		t.Error("reported quiet while the processes used twice the quiet budget")
	}
	if !waitQuiet(t.Context(), 2*time.Second, playedCPU(budget/100)) {
		t.Error("did not report quiet while the processes used a hundredth of the budget")
	}
	if runtime.GOOS != "linux" {
		return
	}
	// The real sampler: this process, idle apart from the test, is quiet.
	if !WaitQuiet(t.Context(), 10*time.Second) {
		t.Error("WaitQuiet did not report an idle test process quiet")
	}
}
