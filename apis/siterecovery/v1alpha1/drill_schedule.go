package v1alpha1

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// drillParser reads spec.drill.schedule: exactly the five standard fields,
// no descriptors (@daily) and no seconds.
var drillParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// ParseDrillSchedule parses a drill schedule, which runs in UTC whatever the
// controller's local zone. The drill controller, the admission webhook and
// `kubectl siterecovery validate` all judge a schedule by it, with the same
// messages. A schedule that is never due (the 30th of February) is refused too.
func ParseDrillSchedule(expr string) (cron.Schedule, error) {
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, errors.New("drill schedule " + quote(expr) + ": a time zone prefix is not allowed, the schedule is in UTC")
	}
	s, err := drillParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("drill schedule %s is not a five-field cron expression (minute hour day-of-month month day-of-week): %w", quote(expr), err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("drill schedule %s is not a five-field cron expression", quote(expr))
	}
	spec.Location = time.UTC
	// The parser's Next gives up after five years and answers zero.
	if spec.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("drill schedule %s is never due", quote(expr))
	}
	return spec, nil
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
