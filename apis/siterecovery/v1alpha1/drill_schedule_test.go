package v1alpha1

import (
	"strings"
	"testing"
	"time"
)

func TestParseDrillSchedule(t *testing.T) {
	from := time.Date(2026, 12, 6, 12, 30, 0, 0, time.UTC)
	for expr, next := range map[string]time.Time{
		"0 3 * * *":    time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC),
		"*/15 * * * *": time.Date(2026, 12, 6, 12, 45, 0, 0, time.UTC),
		"0 2 * * 0":    time.Date(2026, 12, 13, 2, 0, 0, 0, time.UTC), // 6 Dec 2026 is a Sunday
		"0 0 29 2 *":   time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC),
	} {
		s, err := ParseDrillSchedule(expr)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		// A time in another zone is read as the same instant, the slot in UTC.
		if got := s.Next(from.In(time.FixedZone("UTC+5", 5*3600))); !got.Equal(next) {
			t.Errorf("%q: next after %s is %s, want %s", expr, from, got, next)
		}
	}
	for expr, want := range map[string]string{
		"TZ=Europe/Paris 0 3 * * *": "time zone prefix",
		"@daily":                    "five-field",
		"0 0 3 * * *":               "five-field",
		"61 * * * *":                "five-field",
		"0 0 30 2 *":                "never due",
	} {
		_, err := ParseDrillSchedule(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", expr, err, want)
		}
	}
}
