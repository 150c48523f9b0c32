package drill

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

func mustSchedule(t *testing.T, expr string) interface{ Next(time.Time) time.Time } {
	t.Helper()
	s, err := srv1alpha1.ParseDrillSchedule(expr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// After downtime the latest missed slot runs, once, whatever the schedule's
// grain and however long the downtime.
func TestLatestSlot(t *testing.T) {
	for _, c := range []struct{ expr, due, now, want string }{
		{"0 3 * * *", "2026-12-06T03:00:00Z", "2026-12-06T03:00:00Z", "2026-12-06T03:00:00Z"},
		{"0 3 * * *", "2026-12-01T03:00:00Z", "2026-12-06T12:00:00Z", "2026-12-06T03:00:00Z"},
		{"0 3 * * *", "2026-12-01T03:00:00Z", "2026-12-06T02:59:59Z", "2026-12-05T03:00:00Z"},
		{"* * * * *", "2020-01-01T00:00:00Z", "2026-12-06T12:30:30Z", "2026-12-06T12:30:00Z"},
		{"0 2 * * 0", "2025-01-05T02:00:00Z", "2026-12-09T00:00:00Z", "2026-12-06T02:00:00Z"},
		{"0 0 1 1 *", "2020-01-01T00:00:00Z", "2026-12-06T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"0 0 29 2 *", "2016-02-29T00:00:00Z", "2026-12-06T00:00:00Z", "2024-02-29T00:00:00Z"},
	} {
		got := latestSlot(mustSchedule(t, c.expr), at(c.due), at(c.now))
		if !got.Equal(at(c.want)) {
			t.Errorf("%q due %s, now %s: latest slot %s, want %s", c.expr, c.due, c.now, got, c.want)
		}
	}
}

func TestIsSlot(t *testing.T) {
	s := mustSchedule(t, "30 3 * * *")
	if !isSlot(s, at("2026-12-06T03:30:00Z")) || isSlot(s, at("2026-12-06T03:31:00Z")) || isSlot(s, at("2026-12-06T03:30:10Z")) {
		t.Fatal("isSlot does not tell 03:30 from other times")
	}
}

// Names are the same on every retry, differ per slot and per group even when
// shortened, and fit a DNS label (the isolated namespace must).
func TestNames(t *testing.T) {
	slot := at("2026-12-06T03:00:00Z")
	if got := Name("db", slot); got != "db-drill-202612060300" {
		t.Fatalf("Name = %s", got)
	}
	if got := IsolatedNamespace("db.prod", slot); got != "sr-drill-db-prod-202612060300" {
		t.Fatalf("IsolatedNamespace = %s", got)
	}
	long1, long2 := strings.Repeat("a", 100)+"x", strings.Repeat("a", 100)+"y"
	seen := map[string]bool{}
	for _, g := range []string{long1, long2} {
		for _, n := range []string{Name(g, slot), Name(g, slot.Add(time.Minute)), IsolatedNamespace(g, slot)} {
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				t.Errorf("%s: %v", n, errs)
			}
			if seen[n] {
				t.Errorf("%s given twice", n)
			}
			seen[n] = true
		}
	}
	if got := Name(long1, slot); !regexp.MustCompile(`^a{35}-[0-9a-f]{8}-drill-202612060300$`).MatchString(got) {
		t.Fatalf("a long group's drill is %s: a prefix and a hash of the group, then the slot", got)
	}
}
