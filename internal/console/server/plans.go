package server

import (
	"time"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

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
