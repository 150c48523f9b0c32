package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/siterecovery/siterecovery/internal/quorum/failover
BenchmarkFailover20VMs
    bench_test.go:90: pair 1: failover 1.2s, floor 700ms, ratio 1.71
BenchmarkFailover20VMs-2   	       1	60123456789 ns/op	       210.0 etcd-cpu-ms	       900.0 floor-kube-apiserver-cpu-ms	       1200 kube-apiserver-cpu-ms	         0 dropped	       700.0 floor-ms	      1.710 ratio-median	      2.100 ratio-max	        10.00 pairs	      1197 product-ms
BenchmarkSteadyState-2   	       1	100 ns/op	        88.5 quorum-rss-MiB	         0 idle-writes
PASS
`

func TestParseAndWrite(t *testing.T) {
	results, err := parse(strings.NewReader(sample), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("parsed %d results, want 2: %+v", len(results), results)
	}
	if r := results[0]; r.name != "failover.BenchmarkFailover20VMs" || r.metrics["ratio-median"] != 1.71 || r.metrics["product-ms"] != 1197 {
		t.Fatalf("first result %+v", r)
	}
	var out bytes.Buffer
	if err := write(&out, results); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"failover.BenchmarkFailover20VMs", "1197", "1.71", "2.10", "10 (0)", "1200 / 210 / -", "900 / - / -",
		"failover.BenchmarkSteadyState: 88.5 quorum-rss-MiB, 0 idle-writes"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
