package harness

import (
	"context"
	"fmt"
	"sort"
)

// RequestCounts is kube-apiserver's apiserver_request_total summed per "verb
// resource/subresource". Benchmarks take one before and one after a measured
// window to show which requests the window's API server time went to.
type RequestCounts map[string]float64

// RequestCounts reads the cluster's request counters from its /metrics.
func (c *Cluster) RequestCounts(ctx context.Context) (RequestCounts, error) {
	data, err := c.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	out := RequestCounts{}
	for _, s := range Samples(data, "apiserver_request_total") {
		out[s.Labels["verb"]+" "+s.Labels["resource"]+"/"+s.Labels["subresource"]] += s.Value
	}
	return out, nil
}

// Since returns the total of requests made since before and, busiest first,
// every kind of request made at least atLeast times.
func (r RequestCounts) Since(before RequestCounts, atLeast float64) (float64, []string) {
	total := 0.0
	type count struct {
		key string
		n   float64
	}
	var counts []count
	for k, v := range r {
		if d := v - before[k]; d > 0 {
			total += d
			if d >= atLeast {
				counts = append(counts, count{k, d})
			}
		}
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i].n > counts[j].n })
	lines := make([]string, len(counts))
	for i, c := range counts {
		lines[i] = fmt.Sprintf("%-45s %4.0f", c.key, c.n)
	}
	return total, lines
}
