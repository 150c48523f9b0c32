package faultmatrix

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

type cell string

func (c cell) String() string { return string(c) }

func cellsOf(names ...string) []cell {
	out := make([]cell, len(names))
	for i, n := range names {
		out[i] = cell(n)
	}
	return out
}

// setFlags sets the package's flags for one test and puts them back after.
func setFlags(t *testing.T, all bool, seed uint64, cells int, only string) {
	was := [...]any{*flagAll, *flagSeed, *flagCells, *flagOnly}
	*flagAll, *flagSeed, *flagCells, *flagOnly = all, seed, cells, only
	t.Cleanup(func() {
		*flagAll, *flagSeed, *flagCells, *flagOnly = was[0].(bool), was[1].(uint64), was[2].(int), was[3].(string)
	})
}

func TestPick(t *testing.T) {
	matrix := cellsOf("protect/agent killed/A", "protect/agent killed/B", "protect/api stopped/A", "protect/api stopped/B",
		"unprotect/agent killed/A", "unprotect/api stopped/A")
	validated := func(c cell) bool { return !strings.Contains(string(c), "api stopped") }

	setFlags(t, false, 20, 0, "")
	a, seed := Pick(matrix, validated, 2)
	if seed != 20 {
		t.Fatalf("seed %d, want the flag's 20", seed)
	}
	if len(a) != 2 {
		t.Fatalf("picked %v, want 2 cells", a)
	}
	for _, c := range a {
		if !validated(c) {
			t.Fatalf("the rotation picked %s, which is not validated", c)
		}
	}
	if b, _ := Pick(matrix, validated, 2); !slices.Equal(a, b) {
		t.Fatalf("one seed picked %v, then %v", a, b)
	}

	setFlags(t, false, 20, 0, "api stopped")
	if got, _ := Pick(matrix, validated, 2); len(got) != 3 {
		t.Fatalf("-fault-matrix.only picked %v, want its 3 cells, validated or not", got)
	}

	setFlags(t, true, 20, 0, "")
	got, _ := Pick(matrix, validated, 2)
	if len(got) != len(matrix) {
		t.Fatalf("-fault-matrix.all picked %v, want all %d", got, len(matrix))
	}
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	want := slices.Clone(matrix)
	slices.Sort(want)
	if !slices.Equal(sorted, want) {
		t.Fatalf("-fault-matrix.all picked %v, not each cell once", got)
	}

	setFlags(t, false, 20, 3, "")
	if got, _ := Pick(matrix, nil, 1); len(got) != 3 {
		t.Fatalf("-fault-matrix.cells=3 picked %v", got)
	}

	setFlags(t, false, 0, 0, "")
	t.Setenv(SeedEnv, "7")
	if s := Seed(); s != 7 {
		t.Fatalf("seed %d, want %s's 7", s, SeedEnv)
	}
}

func TestOverlaps(t *testing.T) {
	r := newPresence("apps", vmiKind)
	t0 := time.Unix(1000, 0)
	r.observe("primary", "vm1", watch.Added, true, t0)
	r.observe("primary", "vm1", watch.Deleted, true, t0.Add(time.Second))
	r.observe("dr", "vm1", watch.Added, true, t0.Add(2*time.Second))
	r.observe("dr", "vm1", watch.Deleted, true, t0.Add(3*time.Second))
	if o := r.Overlaps(); len(o) != 0 {
		t.Fatalf("a VM that moved is reported on two clusters: %v", o)
	}
	r.observe("primary", "vm2", watch.Added, true, t0)
	r.observe("dr", "vm2", watch.Added, true, t0.Add(time.Second))
	r.observe("dr", "vm2", watch.Deleted, true, t0.Add(1100*time.Millisecond))
	if o := r.Overlaps(); len(o) != 1 || !strings.HasPrefix(o[0], "vm2 on ") {
		t.Fatalf("a 100 ms overlap of vm2 is %v", o)
	}
	if !r.SawOn("dr", "vm2") || r.SawOn("dr", "vm3") {
		t.Fatal("SawOn")
	}
	// Lost with its site, an instance no longer runs whatever etcd holds.
	r.observe("primary", "vm3", watch.Added, true, t0)
	r.SiteLost("primary")
	r.observe("dr", "vm3", watch.Added, true, time.Now().Add(time.Second))
	for _, o := range r.Overlaps() {
		if strings.HasPrefix(o, "vm3 ") {
			t.Fatalf("vm3 started on dr after its site was lost: %s", o)
		}
	}
	if r.Events() != 9 {
		t.Fatalf("events %d, want 9", r.Events())
	}
	if !r.Ended("primary", "vm1") || r.Ended("dr", "vm4") {
		t.Fatal("Ended")
	}
}

func TestPresenceWhileLive(t *testing.T) {
	r := newPresence("ops", Kind{})
	t0 := time.Unix(1000, 0)
	// A VGR on primary stays Primary until 2 s, the one on dr is Primary from 3 s.
	r.observe("primary", "vgr", watch.Added, true, t0)
	r.observe("primary", "vgr", watch.Modified, false, t0.Add(2*time.Second))
	r.observe("dr", "vgr", watch.Added, false, t0)
	r.observe("dr", "vgr", watch.Modified, true, t0.Add(3*time.Second))
	if o := r.Overlaps(); len(o) != 0 {
		t.Fatalf("a state handed over is reported on two clusters: %v", o)
	}
	r.observe("primary", "vgr", watch.Modified, true, t0.Add(4*time.Second))
	if o := r.Overlaps(); len(o) != 1 {
		t.Fatalf("both live from 4 s: %v", o)
	}
}

// The data check tells a start stopped before its disks answered (no guest
// ran on them) from one whose data could not be read: only an instance
// ended after the start counts, not one that ended before it.
func TestEndedSince(t *testing.T) {
	r := newPresence("apps", vmiKind)
	t0 := time.Unix(1000, 0)
	r.observe("primary", "vm1", watch.Added, true, t0)
	r.observe("primary", "vm1", watch.Deleted, true, t0.Add(time.Second))
	r.observe("primary", "vm1", watch.Added, true, t0.Add(2*time.Second))
	if r.EndedSince("primary", "vm1", t0.Add(2*time.Second)) {
		t.Fatal("the instance started at 2 s is still running, but counts as ended by the one that ended at 1 s")
	}
	r.observe("primary", "vm1", watch.Deleted, true, t0.Add(3*time.Second))
	if !r.EndedSince("primary", "vm1", t0.Add(2*time.Second)) {
		t.Fatal("the instance started at 2 s ended at 3 s, but does not count as ended")
	}
	if r.EndedSince("dr", "vm1", t0) {
		t.Fatal("an instance on another cluster counts")
	}
}
