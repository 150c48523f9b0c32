package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100
// on every Linux platform Go supports.
const clockTicks = 100

// CPUSample is the CPU time used so far by the test process and by each
// process it started (the zones' kube-apiservers and etcds), keyed "name pid".
// Benchmarks take one before and one after a measured window to show which
// process the window's time went to.
type CPUSample map[string]time.Duration

// SampleCPU reads the CPU time of this process and its children from /proc.
// On systems without /proc it returns an empty sample.
func SampleCPU() CPUSample {
	s := CPUSample{}
	self := os.Getpid()
	if name, _, cpu, err := readStat(self); err == nil {
		s[fmt.Sprintf("%s %d", name, self)] = cpu
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		name, ppid, cpu, err := readStat(pid)
		if err == nil && ppid == self {
			s[fmt.Sprintf("%s %d", name, pid)] = cpu
		}
	}
	return s
}

// Since lists, busiest first, the CPU time each process used between before
// and s, and the total.
func (s CPUSample) Since(before CPUSample) string {
	type use struct {
		name string
		cpu  time.Duration
	}
	var uses []use
	var total time.Duration
	for name, cpu := range s {
		d := cpu - before[name]
		uses = append(uses, use{name, d})
		total += d
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].cpu > uses[j].cpu })
	parts := make([]string, 0, len(uses))
	for _, u := range uses {
		parts = append(parts, fmt.Sprintf("%s %s", u.name, u.cpu.Round(time.Millisecond)))
	}
	return fmt.Sprintf("CPU %s: %s", total.Round(time.Millisecond), strings.Join(parts, ", "))
}

// Used is the CPU time all the processes of s used since before.
func (s CPUSample) Used(before CPUSample) time.Duration {
	var total time.Duration
	for name, cpu := range s {
		total += cpu - before[name]
	}
	return total
}

// Quiet thresholds: the processes of a test are quiet when, over quietInterval,
// they use less than quietShare of the machine's CPUs.
const (
	quietInterval = 250 * time.Millisecond
	quietShare    = 0.2
)

// WaitQuiet waits until the test process and the servers it started are
// quiet: the tail of a previous step (writes, events, requeues) has drained.
// A benchmark calls it before a measured window. It gives up after limit and
// reports whether the processes became quiet.
func WaitQuiet(ctx context.Context, limit time.Duration) bool {
	return waitQuiet(ctx, limit, SampleCPU)
}

// waitQuiet is WaitQuiet with the CPU sampler as a parameter, so that its
// decision can be tested on known figures: on a machine that other processes
// load, goroutines that spin get less CPU than the budget and look idle.
func waitQuiet(ctx context.Context, limit time.Duration, sample func() CPUSample) bool {
	budget := time.Duration(float64(quietInterval) * quietShare * float64(runtime.NumCPU()))
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		before := sample()
		select {
		case <-ctx.Done():
			return false
		case <-time.After(quietInterval):
		}
		if sample().Used(before) < budget {
			return true
		}
	}
	return false
}

// readStat returns a process's command name, parent and user+system CPU time.
func readStat(pid int) (string, int, time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, err
	}
	// The command name is in parentheses and may hold spaces; fields follow it.
	line := string(b)
	open, closing := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || closing < open {
		return "", 0, 0, fmt.Errorf("malformed stat of %d", pid)
	}
	f := strings.Fields(line[closing+1:])
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return "", 0, 0, fmt.Errorf("short stat of %d", pid)
	}
	ppid, _ := strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return line[open+1 : closing], ppid, time.Duration(utime+stime) * time.Second / clockTicks, nil
}
