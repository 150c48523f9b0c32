package harness

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// Sample is one sample of a Prometheus text exposition: its labels and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Samples returns the samples of the metric family name in a Prometheus text
// exposition (histogram and summary series are named by their own suffixes).
func Samples(exposition []byte, name string) []Sample {
	var out []Sample
	for _, line := range strings.Split(string(exposition), "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		labels := map[string]string{}
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			for _, kv := range strings.Split(rest[1:end], ",") {
				if i := strings.IndexByte(kv, '='); i > 0 {
					labels[kv[:i]] = strings.Trim(kv[i+1:], `"`)
				}
			}
			rest = rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		out = append(out, Sample{Labels: labels, Value: v})
	}
	return out
}

// Sum is the total of samples whose labels include every pair of match.
func Sum(samples []Sample, match map[string]string) float64 {
	total := 0.0
	for _, s := range samples {
		ok := true
		for k, v := range match {
			if s.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.Value
		}
	}
	return total
}

// Metrics reads the cluster's kube-apiserver /metrics.
func (c *Cluster) Metrics(ctx context.Context) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	data, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: read metrics: %w", c.Name, err)
	}
	return data, nil
}
