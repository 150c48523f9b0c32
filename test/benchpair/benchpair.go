// Package benchpair runs a benchmark's product rounds interleaved with rounds
// of its floor (the writes no correct implementation can do without, made by a
// plain client on the same API servers) and reports the product's time over the
// floor's, pair by pair. On a machine whose speed varies from minute to minute
// (two cores shared by three control planes and every controller), a ratio of
// two rounds run seconds apart says more than either time alone.
//
// A pair whose floor round stalled is dropped: its wall time per CPU second is
// far above the other floor rounds', so the machine, not the code, set its time
// (another process held the cores), and its ratio would flatter the product.
package benchpair

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siterecovery/siterecovery/test/harness"
)

// PairsEnv overrides a benchmark's count of pairs: BENCH_PAIRS=20.
const PairsEnv = "BENCH_PAIRS"

// stallFactor: a floor round stalled when its wall time per CPU second is more
// than stallFactor times the median of the floor rounds'.
const stallFactor = 2.0

// Round is one measured window: its wall time and the CPU time each process
// used in it (see Meter).
type Round struct {
	Wall time.Duration
	// CPU per process kind: "kube-apiserver", "etcd" (summed over the zone's
	// clusters) and "test" (this process: every in-process controller,
	// simulator and the benchmark's own client).
	CPU map[string]time.Duration
}

// CPUTotal is the CPU time of every process in the window.
func (r Round) CPUTotal() time.Duration {
	var t time.Duration
	for _, d := range r.CPU {
		t += d
	}
	return t
}

// Meter measures one round's window. A round function does its preparation
// (reads, settling the zone), calls Start, does the measured work, calls Stop.
type Meter struct {
	start time.Time
	cpu   harness.CPUSample
	round *Round
}

// Start opens the window.
func (m *Meter) Start() {
	m.cpu = harness.SampleCPU()
	m.start = time.Now()
}

// Stop closes the window; only the first call counts.
func (m *Meter) Stop() {
	if m.round != nil {
		return
	}
	wall := time.Since(m.start)
	m.round = &Round{Wall: wall, CPU: byKind(harness.SampleCPU(), m.cpu)}
}

// Func runs round i (0-based) and measures its window with m.
type Func func(i int, m *Meter)

// Options tune Run.
type Options struct {
	// Pairs is the count of floor+product pairs (PairsEnv overrides it); 10 if
	// zero.
	Pairs int
	// Unit names what one round is, for the log ("failover", "consensus").
	Unit string
}

// Result is what Run measured.
type Result struct {
	Pairs   []Pair
	Dropped int
}

// Pair is one floor round and the product round after it.
type Pair struct {
	Floor, Product Round
	Stalled        bool
}

// Ratio is the product's wall time over the floor's.
func (p Pair) Ratio() float64 { return float64(p.Product.Wall) / float64(p.Floor.Wall) }

// Run runs o.Pairs pairs, the floor first in each, and reports with
// b.ReportMetric, over the pairs kept:
//   - product-ms, floor-ms: the medians of the rounds' wall times;
//   - ratio-median, ratio-max: of the per-pair ratio product/floor;
//   - cpu-ratio-median: of the per-pair ratio of CPU time (every process);
//   - pairs, dropped: pairs kept, and pairs dropped because the floor stalled;
//   - <kind>-cpu-ms, floor-<kind>-cpu-ms: the median CPU time per round of
//     each process kind (kube-apiserver, etcd, test), product and floor.
//
// The benchmark should run with -benchtime 1x: one call of the benchmark
// function holds every pair (a zone takes a minute to build).
func Run(b *testing.B, o Options, floor, product Func) Result {
	b.Helper()
	n := o.Pairs
	if v := os.Getenv(PairsEnv); v != "" {
		if p, err := strconv.Atoi(v); err == nil && p > 0 {
			n = p
		}
	}
	if n == 0 {
		n = 10
	}
	unit := o.Unit
	if unit == "" {
		unit = "round"
	}
	var res Result
	b.ResetTimer()
	for i := range n {
		fl := measure(b, i, floor)
		pr := measure(b, i, product)
		p := Pair{Floor: fl, Product: pr}
		res.Pairs = append(res.Pairs, p)
		b.Logf("pair %d: %s %s, floor %s, ratio %.2f; CPU product %s, floor %s", i+1, unit,
			pr.Wall.Round(time.Millisecond), fl.Wall.Round(time.Millisecond), p.Ratio(), cpuString(pr), cpuString(fl))
	}
	b.StopTimer()
	res.markStalls()
	for _, p := range res.Pairs {
		if p.Stalled {
			res.Dropped++
		}
	}
	res.report(b)
	return res
}

func measure(b *testing.B, i int, f Func) Round {
	b.Helper()
	m := &Meter{}
	f(i, m)
	if m.round == nil {
		if m.start.IsZero() {
			b.Fatalf("round %d never started its meter", i)
		}
		m.Stop()
	}
	return *m.round
}

// markStalls marks the pairs whose floor's wall time per CPU second is more
// than stallFactor times the median of all floor rounds'.
func (r *Result) markStalls() {
	per := make([]float64, 0, len(r.Pairs))
	for _, p := range r.Pairs {
		per = append(per, wallPerCPU(p.Floor))
	}
	med := medianFloat(per)
	for i := range r.Pairs {
		r.Pairs[i].Stalled = med > 0 && wallPerCPU(r.Pairs[i].Floor) > stallFactor*med
	}
}

func wallPerCPU(r Round) float64 {
	cpu := r.CPUTotal()
	if cpu <= 0 {
		return 0 // no /proc: nothing to judge by
	}
	return float64(r.Wall) / float64(cpu)
}

// Kept are the pairs whose floor did not stall.
func (r Result) Kept() []Pair {
	var out []Pair
	for _, p := range r.Pairs {
		if !p.Stalled {
			out = append(out, p)
		}
	}
	return out
}

func (r Result) report(b *testing.B) {
	kept := r.Kept()
	if len(kept) == 0 {
		b.Fatalf("every one of %d pairs was dropped: the floor stalled in each", len(r.Pairs))
	}
	var prod, fl, ratio, cpuRatio []float64
	cpu := map[string][]float64{}
	for _, p := range kept {
		prod = append(prod, ms(p.Product.Wall))
		fl = append(fl, ms(p.Floor.Wall))
		ratio = append(ratio, p.Ratio())
		if f := p.Floor.CPUTotal(); f > 0 {
			cpuRatio = append(cpuRatio, float64(p.Product.CPUTotal())/float64(f))
		}
		for k, d := range p.Product.CPU {
			cpu[k] = append(cpu[k], ms(d))
		}
		for k, d := range p.Floor.CPU {
			cpu["floor-"+k] = append(cpu["floor-"+k], ms(d))
		}
	}
	b.ReportMetric(medianFloat(prod), "product-ms")
	b.ReportMetric(medianFloat(fl), "floor-ms")
	b.ReportMetric(medianFloat(ratio), "ratio-median")
	b.ReportMetric(slices.Max(ratio), "ratio-max")
	if len(cpuRatio) > 0 {
		b.ReportMetric(medianFloat(cpuRatio), "cpu-ratio-median")
	}
	b.ReportMetric(float64(len(kept)), "pairs")
	b.ReportMetric(float64(r.Dropped), "dropped")
	for k, v := range cpu {
		b.ReportMetric(medianFloat(v), k+"-cpu-ms")
	}
	b.Logf("%d pairs, %d dropped (floor stalled): product median %.0f ms, floor median %.0f ms, ratio median %.2f, max %.2f",
		len(r.Pairs), r.Dropped, medianFloat(prod), medianFloat(fl), medianFloat(ratio), slices.Max(ratio))
}

// byKind sums the CPU time each process used between before and after by
// kind: kube-apiserver, etcd, and "test" for this process.
func byKind(after, before harness.CPUSample) map[string]time.Duration {
	self := fmt.Sprintf(" %d", os.Getpid())
	out := map[string]time.Duration{}
	for key, cpu := range after {
		kind, _, _ := strings.Cut(key, " ")
		if strings.HasSuffix(key, self) {
			kind = "test"
		}
		out[kind] += cpu - before[key]
	}
	return out
}

func cpuString(r Round) string {
	kinds := make([]string, 0, len(r.CPU))
	for k := range r.CPU {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %s", k, r.CPU[k].Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func medianFloat(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
