package harness

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
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

func TestWaitQuiet(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	// One spinner per CPU: on a machine other processes also load, a single
	// spinner can get less than the quiet budget and look idle.
	stop := make(chan struct{})
	var spinners sync.WaitGroup
	for range runtime.NumCPU() {
		spinners.Go(func() {
			x := 0
			for {
				select {
				case <-stop:
					_ = x
					return
				default:
					for i := range 100_000 {
						x += i
					}
				}
			}
		})
	}
	if WaitQuiet(t.Context(), time.Second) {
		t.Error("WaitQuiet reported quiet while a goroutine kept a CPU busy")
	}
	close(stop)
	spinners.Wait()
	if !WaitQuiet(t.Context(), 10*time.Second) {
		t.Error("WaitQuiet did not report quiet once the goroutine stopped")
	}
}
