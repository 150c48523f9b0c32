package v1alpha1

import (
	"fmt"
	"time"
)

// VolSyncSchedule is the cron expression of VolSync's schedule trigger that
// repeats exactly every interval (a DRPolicy's schedulingInterval,
// <number><m|h|d>). A cron step repeats evenly only when it divides its
// field's range, so the intervals it can honour are those of
// VolSyncIntervals; any other is refused, with that list, rather than run
// at another rate: */59 fires at :00 and :59, and a 90m interval rounded to
// hours would run hourly. VolSync's schedule trigger is a five-field cronspec
// (backube/volsync docs/usage/triggers.rst); its manual trigger, which syncs
// once per request, could serve any interval, but only if pg-controller drove
// every cycle itself, which it does only for a relocate's final sync.
func VolSyncSchedule(interval string) (string, error) {
	d, err := ParseSchedulingInterval(interval)
	if err != nil {
		return "", err
	}
	switch {
	case d < time.Hour && time.Hour%d == 0 && d%time.Minute == 0:
		return fmt.Sprintf("*/%d * * * *", int(d.Minutes())), nil
	case d < 24*time.Hour && 24*time.Hour%d == 0 && d%time.Hour == 0:
		return fmt.Sprintf("0 */%d * * *", int(d.Hours())), nil
	case d == 24*time.Hour:
		return "0 0 * * *", nil
	case d == 7*24*time.Hour:
		return "0 0 * * 0", nil
	}
	return "", fmt.Errorf("schedulingInterval %s cannot be honoured by VolSync's cron schedule, which repeats evenly only every %s; use one of those", interval, VolSyncIntervals)
}

// VolSyncIntervals are the schedulingIntervals VolSyncSchedule honours.
const VolSyncIntervals = "1, 2, 3, 4, 5, 6, 10, 12, 15, 20 or 30 minutes, 1, 2, 3, 4, 6, 8, 12 or 24 hours, or 7 days"

// ParseSchedulingInterval parses <number><m|h|d> with a positive number.
func ParseSchedulingInterval(interval string) (time.Duration, error) {
	var n int
	var unit string
	if _, err := fmt.Sscanf(interval, "%d%s", &n, &unit); err != nil || n <= 0 {
		return 0, fmt.Errorf("scheduling interval %q is not <number><m|h|d>", interval)
	}
	switch unit {
	case "m":
		return time.Duration(n) * time.Minute, nil
	case "h":
		return time.Duration(n) * time.Hour, nil
	case "d":
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return 0, fmt.Errorf("scheduling interval %q is not <number><m|h|d>", interval)
}
