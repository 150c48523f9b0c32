package server

import (
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// drillView is a group's drill schedule (spec.drill) and where its drills
// stand (status.drill), for the group page.
type drillView struct {
	// Schedule is five cron fields, in UTC.
	Schedule       string     `json:"schedule"`
	Suspended      bool       `json:"suspended,omitempty"`
	TargetCluster  string     `json:"targetCluster"`
	Keep           int32      `json:"keep,omitempty"`
	Next           *time.Time `json:"next,omitempty"`
	LastScheduled  *time.Time `json:"lastScheduled,omitempty"`
	LastDrill      string     `json:"lastDrill,omitempty"`
	LastResult     string     `json:"lastResult,omitempty"`
	LastSuccessful *time.Time `json:"lastSuccessful,omitempty"`
	Active         string     `json:"active,omitempty"`
	Message        string     `json:"message,omitempty"`
}

// drillOf is nil for a group without a drill schedule.
func drillOf(g *srv1alpha1.ProtectionGroup) *drillView {
	d := g.Spec.Drill
	if d == nil {
		return nil
	}
	v := &drillView{Schedule: d.Schedule, Suspended: d.Suspend, TargetCluster: d.Template.TargetCluster, Keep: d.Keep}
	if st := g.Status.Drill; st != nil {
		v.Next, v.LastScheduled, v.LastSuccessful = timeOf(st.NextScheduleTime), timeOf(st.LastScheduleTime), timeOf(st.LastSuccessfulTime)
		v.LastDrill, v.LastResult, v.Active, v.Message = st.LastDrill, string(st.LastResult), st.Active, st.Message
	}
	return v
}

// consistencyView is what the group asks of its replication points and what
// the last one reached.
type consistencyView struct {
	// Mode is Crash (also when the group does not say) or Application.
	Mode                 string     `json:"mode"`
	FreezeTimeoutSeconds int32      `json:"freezeTimeoutSeconds,omitempty"`
	LastPoint            *pointView `json:"lastPoint,omitempty"`
}

type pointView struct {
	Time               time.Time `json:"time"`
	Source             string    `json:"source"`
	Consistency        string    `json:"consistency"`
	CrashConsistentVMs []string  `json:"crashConsistentVMs,omitempty"`
	FrozenMilliseconds int64     `json:"frozenMilliseconds,omitempty"`
	Message            string    `json:"message,omitempty"`
}

func consistencyOf(g *srv1alpha1.ProtectionGroup) consistencyView {
	v := consistencyView{Mode: string(srv1alpha1.ConsistencyCrash)}
	if c := g.Spec.Consistency; c != nil {
		if c.Mode != "" {
			v.Mode = string(c.Mode)
		}
		if c.Mode == srv1alpha1.ConsistencyApplication {
			v.FreezeTimeoutSeconds = c.FreezeTimeoutSeconds
		}
	}
	if st := g.Status.Consistency; st != nil && st.LastPoint != nil {
		p := st.LastPoint
		v.LastPoint = &pointView{Time: p.Time.Time, Source: p.Source, Consistency: string(p.Consistency),
			CrashConsistentVMs: p.CrashConsistentVMs, FrozenMilliseconds: p.FrozenMilliseconds, Message: p.Message}
	}
	return v
}
