package failover

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// statusReadTimeout bounds how long an unplanned promotion waits, from the
// request's start, for the source's agents to read DRBD's current figures.
// An unplanned failover is urgent: past it, the figures the source last
// reported are given, with their time and the replicas that did not answer.
const statusReadTimeout = 10 * time.Second

// lossReading is what the source's replicas told of the writes the target
// lacks: fresh when every one of them answered the request's reading.
type lossReading struct {
	total    int64
	replicas int
	perVM    []string  // "<replica> <bytes>" of those with something out of sync
	silent   []string  // replicas that did not answer the reading
	at       time.Time // the oldest figure's time
}

// readLoss measures, before an unplanned promotion, what the target may
// lack. DRBD's event stream sends out-of-sync figures only with a state
// change, so a source writing while the link is down keeps reporting the
// figure of its disconnect. When the source's API server answers, its agents
// are asked to read DRBD's current figures (spec.statusRequest, the
// request's UID) and the promotion waits for the answers, within
// statusReadTimeout of the request's start. It returns a flow wait while
// answers are due, and sets DataLossPossible from what it got: once read,
// the figure stands for the request.
func (r *Reconciler) readLoss(ctx context.Context, s *scope, targetRes []srv1alpha1.DRBDResource) error {
	if c := meta.FindStatusCondition(s.req.Status.Conditions, srv1alpha1.ConditionDataLossRisk); c != nil && c.Reason == srv1alpha1.ReasonLossRead {
		return nil
	}
	left := statusReadTimeout
	if s.req.Status.StartTime != nil {
		left = s.req.Status.StartTime.Add(statusReadTimeout).Sub(s.now)
	}
	key := s.key(s.source())
	health := r.Remote.Health(key)
	src, err := r.Remote.Get(key)
	if err != nil && health.Reachable() && left > 0 {
		// The source answers, but quorum-manager's view of it is still
		// loading (just started, or just reconnected): wait within the budget.
		return flow.Waiting(srv1alpha1.ReasonProgressing, min(left, time.Second),
			"waiting for quorum-manager's view of %s to load, to read DRBD's current out-of-sync figures there before promoting (at most %s more): %w",
			s.source(), left.Round(time.Second), err)
	}
	if err != nil || !health.Reachable() {
		r.reportUnasked(ctx, s, src, health, err, targetRes)
		return nil
	}
	res, err := s.replicasOf(ctx, src)
	if err != nil || len(res) == 0 {
		r.reportUnasked(ctx, s, nil, health, err, targetRes)
		return nil
	}
	token := string(s.req.UID)
	if err := askReading(ctx, src, res, token); err != nil {
		// One line is enough: every replica's write failed the same way.
		first, _, _ := strings.Cut(err.Error(), "\n")
		r.reportUnasked(ctx, s, src, health, fmt.Errorf("its API server did not take the request to read them: %s", first), targetRes)
		return nil
	}
	reading := readingOf(res, token)
	if len(reading.silent) > 0 && left > 0 {
		return flow.Waiting(srv1alpha1.ReasonProgressing, left,
			"reading DRBD's current out-of-sync figures on %s before promoting (%d of %d replicas answered; at most %s more)",
			s.source(), reading.replicas-len(reading.silent), reading.replicas, left.Round(time.Second))
	}
	reason := srv1alpha1.ReasonLossRead
	msg := fmt.Sprintf("%s; DRBD on %s, read at promotion time, has %d bytes out of sync across %d replicas%s",
		unplannedRisk(s.zone, s.group), s.source(), reading.total, reading.replicas, reading.details())
	if len(reading.silent) > 0 {
		reason = srv1alpha1.ReasonLossLastReported
		msg = fmt.Sprintf("%s; DRBD on %s has %d bytes out of sync across %d replicas%s; %d did not answer a reading within %s (%s): their figures are the ones last reported, up to %s, and writes since then are not counted",
			unplannedRisk(s.zone, s.group), s.source(), reading.total, reading.replicas, reading.details(),
			len(reading.silent), statusReadTimeout, flow.Listed(reading.silent), reading.at.UTC().Format(time.RFC3339))
	}
	s.trail.Condition(srv1alpha1.ConditionDataLossRisk, metav1.ConditionTrue, reason, msg)
	return nil
}

// askReading asks the agents of res to read DRBD's current figures for
// token (spec.statusRequest); readingOf tells which answered.
func askReading(ctx context.Context, rc *remote.Remote, res []srv1alpha1.DRBDResource, token string) error {
	return flow.ForEach(parallelWrites, len(res), func(i int) error {
		if res[i].Spec.StatusRequest == token {
			return nil
		}
		return patchDRBD(ctx, rc, &res[i], map[string]any{"statusRequest": token})
	})
}

// readingOf sums the source's out-of-sync figures; replicas whose status
// does not carry the answer to token are silent.
func readingOf(res []srv1alpha1.DRBDResource, token string) lossReading {
	var out lossReading
	for _, d := range res {
		out.replicas++
		var bytes int64
		for _, p := range d.Status.Peers {
			for _, v := range p.Volumes {
				bytes += v.OutOfSyncBytes
			}
		}
		out.total += bytes
		if bytes > 0 {
			out.perVM = append(out.perVM, fmt.Sprintf("%s %d", d.Name, bytes))
		}
		at := d.Status.LastUpdateTime
		if d.Status.StatusAnswered == token && d.Status.StatusReadTime != nil {
			at = d.Status.StatusReadTime
		} else if token != "" {
			out.silent = append(out.silent, d.Name)
		}
		if at != nil && (out.at.IsZero() || at.Before(&metav1.Time{Time: out.at})) {
			out.at = at.Time
		}
	}
	sort.Strings(out.perVM)
	sort.Strings(out.silent)
	return out
}

func (l lossReading) details() string {
	if len(l.perVM) == 0 {
		return ""
	}
	return " (" + strings.Join(l.perVM, ", ") + ")"
}

// reportUnasked sets DataLossPossible when the source could not be asked:
// it says so, and why, and gives the figures the source last reported and
// when, else the target's own.
func (r *Reconciler) reportUnasked(ctx context.Context, s *scope, src *remote.Remote, health remote.Health, cause error, targetRes []srv1alpha1.DRBDResource) {
	why := "its API server does not answer"
	if cause != nil {
		why = cause.Error()
	}
	if !health.LastSuccessTime.IsZero() {
		why += "; it last answered at " + health.LastSuccessTime.UTC().Format(time.RFC3339)
	}
	side, res := s.target(), targetRes
	if src != nil {
		if sr, err := s.replicasOf(ctx, src); err == nil && len(sr) > 0 {
			side, res = s.source(), sr
		}
	}
	reading := readingOf(res, "")
	when := "at no recorded time"
	if !reading.at.IsZero() {
		when = "at " + reading.at.UTC().Format(time.RFC3339)
	}
	s.trail.Condition(srv1alpha1.ConditionDataLossRisk, metav1.ConditionTrue, srv1alpha1.ReasonLossLastReported,
		fmt.Sprintf("%s; the source %s could not be asked for DRBD's current figures (%s). DRBD on %s last reported %d bytes out of sync across %d replicas%s %s; writes acknowledged on %s since then are not counted",
			unplannedRisk(s.zone, s.group), s.source(), why, side, reading.total, reading.replicas, reading.details(), when, s.source()))
}
