package server

import (
	"sync"
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// lagSample is one group's largest replication lag at a moment.
type lagSample struct {
	At      time.Time `json:"at"`
	Seconds int64     `json:"seconds"`
}

// lagSamples keeps, without Prometheus, the lag history the console has
// seen: each ReplicationGroupStatus a user's read brought, at the time the
// monitor computed it. It holds no more than keep of history and maxPerGroup
// samples per group, so a console open for weeks stays small. It is served
// only to users whose own read of the group's status succeeds.
type lagSamples struct {
	keep        time.Duration
	maxPerGroup int

	mu      sync.Mutex
	since   time.Time
	byGroup map[string][]lagSample
}

func newLagSamples(now time.Time) *lagSamples {
	return &lagSamples{keep: 24 * time.Hour, maxPerGroup: 2000, since: now, byGroup: map[string][]lagSample{}}
}

// recordAll takes a sample of every status read; at is the read's time, used
// for a status the monitor has not stamped.
func (l *lagSamples) recordAll(statuses []srv1alpha1.ReplicationGroupStatus, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range statuses {
		s := &statuses[i]
		when := at
		if t := s.Status.LastUpdateTime; t != nil {
			when = t.Time
		}
		l.record(s.Namespace+"/"+groupOfStatus(s), lagSample{At: when, Seconds: s.Status.MaxLagSeconds}, at)
	}
}

func (l *lagSamples) record(key string, s lagSample, now time.Time) {
	list := l.byGroup[key]
	if n := len(list); n > 0 && !s.At.After(list[n-1].At) {
		return // the same status read again, or an older one
	}
	list = append(list, s)
	cut := 0
	for cut < len(list) && (now.Sub(list[cut].At) > l.keep || len(list)-cut > l.maxPerGroup) {
		cut++
	}
	l.byGroup[key] = append(list[:0:0], list[cut:]...)
}

// window returns the samples of a group taken after from, and since when the
// console has been sampling.
func (l *lagSamples) window(ns, group string, from time.Time) ([]lagSample, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []lagSample{}
	for _, s := range l.byGroup[ns+"/"+group] {
		if !s.At.Before(from) {
			out = append(out, s)
		}
	}
	return out, l.since
}

// groupOfStatus names the group a ReplicationGroupStatus reports on.
func groupOfStatus(s *srv1alpha1.ReplicationGroupStatus) string {
	if s.Spec.ProtectionGroupRef.Name != "" {
		return s.Spec.ProtectionGroupRef.Name
	}
	return s.Name
}
