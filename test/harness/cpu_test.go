package harness

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
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
