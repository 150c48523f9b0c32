// Command benchtable reads `go test -bench` output on stdin (with or without
// -v) and prints one table of the paired benchmarks (test/benchpair): product
// and floor medians, the per-pair ratio's median and max (of wall time, and
// the median of CPU time), the pairs kept and dropped, and the CPU time per
// round of each process kind. Benchmarks without
// a floor are listed after it with every figure they report. Every input line
// is passed through to stderr first, so that a run piped through it still
// shows its progress.
//
//	go test -run '^$' -bench . -benchtime 1x ./test/e2e/failover | go run ./test/benchtable
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// result is one benchmark's reported metrics, by unit.
type result struct {
	name    string
	metrics map[string]float64
	order   []string // units in the order reported
}

var resultLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.+)$`)

func parse(r io.Reader, echo io.Writer) ([]result, error) {
	var out []result
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if echo != nil {
			_, _ = fmt.Fprintln(echo, line)
		}
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p[strings.LastIndexByte(p, '/')+1:]
			continue
		}
		m := resultLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := strings.Fields(m[4])
		if len(f)%2 != 0 {
			continue
		}
		res := result{name: m[1], metrics: map[string]float64{}}
		if pkg != "" {
			res.name = pkg + "." + m[1]
		}
		ok := true
		for i := 0; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				ok = false
				break
			}
			res.metrics[f[i+1]] = v
			res.order = append(res.order, f[i+1])
		}
		if ok {
			out = append(out, res)
		}
	}
	return out, sc.Err()
}

// kinds of process whose CPU time benchpair reports.
var kinds = []string{"kube-apiserver", "etcd", "test"}

func write(w io.Writer, results []result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tproduct ms\tfloor ms\tratio med\tratio max\tCPU ratio med\tpairs (dropped)\tCPU ms/round product: apiserver / etcd / test\tfloor: apiserver / etcd / test\t")
	var others []result
	for _, r := range results {
		if _, ok := r.metrics["product-ms"]; !ok {
			others = append(others, r)
			continue
		}
		m := r.metrics
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.0f (%.0f)\t%s\t%s\t\n", r.name, m["product-ms"], m["floor-ms"],
			m["ratio-median"], m["ratio-max"], m["cpu-ratio-median"], m["pairs"], m["dropped"], cpu(m, ""), cpu(m, "floor-"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(others) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	for _, r := range others {
		units := r.order
		parts := make([]string, 0, len(units))
		for _, u := range units {
			if u == "ns/op" {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %s", strconv.FormatFloat(r.metrics[u], 'f', -1, 64), u))
		}
		fmt.Fprintf(w, "%s: %s\n", r.name, strings.Join(parts, ", "))
	}
	return nil
}

func cpu(m map[string]float64, prefix string) string {
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		v, ok := m[prefix+k+"-cpu-ms"]
		if !ok {
			parts = append(parts, "-")
			continue
		}
		parts = append(parts, strconv.FormatFloat(v, 'f', 0, 64))
	}
	return strings.Join(parts, " / ")
}

func main() {
	results, err := parse(os.Stdin, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	sort.SliceStable(results, func(i, j int) bool { return results[i].name < results[j].name })
	if err := write(os.Stdout, results); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}
