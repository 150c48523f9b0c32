package harness

import "testing"

func TestSamples(t *testing.T) {
	text := []byte(`# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",resource="pods",subresource="",verb="LIST"} 3
apiserver_request_total{code="200",resource="pods",subresource="",verb="WATCH"} 2
apiserver_request_total_other{verb="LIST"} 100
process_cpu_seconds_total 12.5
`)
	s := Samples(text, "apiserver_request_total")
	if len(s) != 2 || Sum(s, map[string]string{"verb": "LIST"}) != 3 || Sum(s, nil) != 5 {
		t.Fatalf("samples %+v", s)
	}
	if got := Sum(Samples(text, "process_cpu_seconds_total"), nil); got != 12.5 {
		t.Fatalf("unlabelled sample %v", got)
	}
}
