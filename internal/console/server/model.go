package server

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// requestedByAnnotation names, on a request the console creates, the user the
// API server authenticated for the session that created it.
const requestedByAnnotation = "siterecovery.trilio.io/requested-by"

// fieldOwner is the field manager of the console's writes.
const fieldOwner = "siterecovery-console"

// snapshot is everything the console read for a set of DR namespaces.
type snapshot struct {
	zones    []srv1alpha1.ProtectionZone
	groups   []srv1alpha1.ProtectionGroup
	statuses []srv1alpha1.ReplicationGroupStatus
	rpo      []srv1alpha1.RPOEvent
	failover []srv1alpha1.FailoverRequest
	tests    []srv1alpha1.TestFailover
	protects []srv1alpha1.ProtectionRequest
	// hidden names what the user may not read, per namespace, and why.
	hidden map[string][]string
}

// Lag levels of the RPO bar.
const (
	lagOK      = "ok"
	lagWarning = "warning"
	lagDanger  = "danger"
	lagUnknown = "unknown"
)

// warningShare is the share of the RPO objective above which the lag bar
// turns amber; above the objective it is red.
const warningShare = 0.75

type clusterView struct {
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	Reachable *bool      `json:"reachable,omitempty"`
	Message   string     `json:"message,omitempty"`
	LastProbe *time.Time `json:"lastProbe,omitempty"`
	Version   string     `json:"version,omitempty"`
}

type zoneView struct {
	Namespace   string        `json:"namespace"`
	Name        string        `json:"name"`
	DisplayName string        `json:"displayName,omitempty"`
	Backend     string        `json:"backend"`
	Ready       *bool         `json:"ready,omitempty"`
	Clusters    []clusterView `json:"clusters"`
}

type groupView struct {
	Namespace        string   `json:"namespace"`
	Name             string   `json:"name"`
	Zone             string   `json:"zone,omitempty"`
	ActiveCluster    string   `json:"activeCluster,omitempty"`
	Clusters         []string `json:"clusters,omitempty"`
	VMs              int      `json:"vms"`
	State            string   `json:"state,omitempty"`
	Health           string   `json:"health"`
	FailoverReady    bool     `json:"failoverReady"`
	LagSeconds       *int64   `json:"lagSeconds,omitempty"`
	ObjectiveSeconds int32    `json:"objectiveSeconds,omitempty"`
	LagLevel         string   `json:"lagLevel"`
	AtRisk           bool     `json:"atRisk"`
	TestActive       bool     `json:"testActive"`
	ActiveRPOEvent   string   `json:"activeRPOEvent,omitempty"`
	Message          string   `json:"message,omitempty"`
}

type rpoView struct {
	Namespace      string     `json:"namespace"`
	Name           string     `json:"name"`
	Group          string     `json:"group"`
	Objective      int32      `json:"objectiveSeconds"`
	PeakLagSeconds int64      `json:"peakLagSeconds"`
	Start          time.Time  `json:"start"`
	End            *time.Time `json:"end,omitempty"`
	State          string     `json:"state"`
	AffectedVMs    []string   `json:"affectedVMs,omitempty"`
	Message        string     `json:"message,omitempty"`
}

type stepView struct {
	Phase           string    `json:"phase"`
	Time            time.Time `json:"time"`
	Message         string    `json:"message,omitempty"`
	DurationSeconds float64   `json:"durationSeconds"`
}

type conditionView struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

type checkView struct {
	VM      string `json:"vm"`
	Check   string `json:"check"`
	Passed  bool   `json:"passed"`
	Message string `json:"message,omitempty"`
}

type operationView struct {
	Kind       string          `json:"kind"`
	Namespace  string          `json:"namespace"`
	Name       string          `json:"name"`
	Group      string          `json:"group"`
	Type       string          `json:"type,omitempty"`
	Target     string          `json:"target,omitempty"`
	Source     string          `json:"source,omitempty"`
	VM         string          `json:"vm,omitempty"`
	Phase      string          `json:"phase"`
	Finished   bool            `json:"finished"`
	Succeeded  bool            `json:"succeeded"`
	Created    time.Time       `json:"created"`
	CreatedBy  string          `json:"createdBy,omitempty"`
	Duration   float64         `json:"durationSeconds"`
	Message    string          `json:"message,omitempty"`
	History    []stepView      `json:"history"`
	Conditions []conditionView `json:"conditions,omitempty"`
	// Safety-check outcomes of a failover: the lock and taint checks.
	Lock   string      `json:"lock,omitempty"`
	Taints string      `json:"taints,omitempty"`
	Checks []checkView `json:"checks,omitempty"`
	// Boot is how the group's boot plan ran: a failover's on its target, a
	// test failover's over its test VMs.
	Boot *bootView `json:"boot,omitempty"`
}

type summary struct {
	ProtectedVMs       int `json:"protectedVMs"`
	Groups             int `json:"groups"`
	GroupsAtRisk       int `json:"groupsAtRisk"`
	OpenRPOEvents      int `json:"openRPOEvents"`
	UnfinishedRequests int `json:"unfinishedRequests"`
}

type namespaceView struct {
	Name       string          `json:"name"`
	Zones      []zoneView      `json:"zones"`
	Groups     []groupView     `json:"groups"`
	RPOEvents  []rpoView       `json:"rpoEvents"`
	Unfinished []operationView `json:"unfinished"`
	Hidden     []string        `json:"hidden,omitempty"`
}

type overviewView struct {
	Summary    summary         `json:"summary"`
	Namespaces []namespaceView `json:"namespaces"`
}

func condition(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

func boolOf(c *metav1.Condition) *bool {
	if c == nil || c.Status == metav1.ConditionUnknown {
		return nil
	}
	b := c.Status == metav1.ConditionTrue
	return &b
}

func zoneOf(z *srv1alpha1.ProtectionZone) zoneView {
	v := zoneView{Namespace: z.Namespace, Name: z.Name, DisplayName: z.Spec.DisplayName,
		Backend: string(z.Spec.StorageBackend), Ready: boolOf(condition(z.Status.Conditions, srv1alpha1.ConditionReady))}
	for _, c := range z.Spec.Clusters {
		cv := clusterView{Name: c.Name, Role: string(c.Role)}
		for i := range z.Status.Clusters {
			st := &z.Status.Clusters[i]
			if st.Name != c.Name {
				continue
			}
			r := condition(st.Conditions, srv1alpha1.ConditionReachable)
			cv.Reachable = boolOf(r)
			if r != nil {
				cv.Message = r.Message
			}
			if st.LastProbeTime != nil {
				t := st.LastProbeTime.Time
				cv.LastProbe = &t
			}
			cv.Version = st.ServerVersion
		}
		v.Clusters = append(v.Clusters, cv)
	}
	return v
}

// groupOf summarises a group from its quorum-side status, its replication
// status when the monitor keeps one, and the requests that name it.
func groupOf(g *srv1alpha1.ProtectionGroup, snap *snapshot, now time.Time) groupView {
	v := groupView{Namespace: g.Namespace, Name: g.Name, ActiveCluster: g.Spec.ActiveCluster,
		VMs: len(g.Spec.VirtualMachines), State: string(g.Status.CurrentState), Health: string(srv1alpha1.HealthUnknown),
		ObjectiveSeconds: g.Spec.Replication.RPOObjectiveSeconds, LagLevel: lagUnknown}
	if g.Spec.ZoneRef != nil {
		v.Zone = g.Spec.ZoneRef.Name
	}
	for _, c := range g.Status.Clusters {
		v.Clusters = append(v.Clusters, c.Cluster)
	}
	if rgs := statusFor(snap, g.Namespace, g.Name); rgs != nil {
		v.Health = string(rgs.Status.Health)
		v.FailoverReady = rgs.Status.FailoverReady
		v.ActiveRPOEvent = rgs.Status.ActiveRPOEvent
		if rgs.Status.LastUpdateTime != nil {
			lag := rgs.Status.MaxLagSeconds
			v.LagSeconds = &lag
		}
		if v.ObjectiveSeconds == 0 {
			v.ObjectiveSeconds = rgs.Spec.RPOObjectiveSeconds
		}
	} else {
		// Without a replication status the lag is the age of the standby's
		// last sync, as the group's status reports it.
		for _, c := range g.Status.Clusters {
			if c.Cluster == g.Spec.ActiveCluster {
				continue
			}
			if c.InSync {
				v.Health = string(srv1alpha1.HealthHealthy)
				v.FailoverReady = true
			}
			if c.LastSyncTime != nil {
				lag := int64(now.Sub(c.LastSyncTime.Time).Seconds())
				if c.InSync {
					lag = 0
				}
				if v.LagSeconds == nil || lag > *v.LagSeconds {
					v.LagSeconds = &lag
				}
			}
		}
	}
	if d := condition(g.Status.Conditions, srv1alpha1.ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue {
		v.Message = d.Message
		if v.Health == string(srv1alpha1.HealthHealthy) || v.Health == string(srv1alpha1.HealthUnknown) {
			v.Health = string(srv1alpha1.HealthDegraded)
		}
	}
	v.LagLevel = lagLevel(v.LagSeconds, v.ObjectiveSeconds)
	for i := range snap.rpo {
		e := &snap.rpo[i]
		if e.Namespace == g.Namespace && e.Spec.ProtectionGroupRef.Name == g.Name && e.Status.State != srv1alpha1.RPOEventResolved {
			v.ActiveRPOEvent = e.Name
		}
	}
	for i := range snap.tests {
		t := &snap.tests[i]
		if t.Namespace == g.Namespace && t.Spec.ProtectionGroupRef.Name == g.Name && !testFinished(t) {
			v.TestActive = true
		}
	}
	switch v.Health {
	case string(srv1alpha1.HealthDegraded), string(srv1alpha1.HealthDisconnected):
		v.AtRisk = true
	}
	v.AtRisk = v.AtRisk || v.LagLevel == lagDanger || v.ActiveRPOEvent != "" ||
		v.State == string(srv1alpha1.StateDegraded)
	return v
}

func lagLevel(lag *int64, objective int32) string {
	switch {
	case lag == nil || objective <= 0:
		return lagUnknown
	case *lag > int64(objective):
		return lagDanger
	case float64(*lag) >= warningShare*float64(objective):
		return lagWarning
	}
	return lagOK
}

func statusFor(snap *snapshot, ns, group string) *srv1alpha1.ReplicationGroupStatus {
	for i := range snap.statuses {
		s := &snap.statuses[i]
		if s.Namespace == ns && (s.Spec.ProtectionGroupRef.Name == group || s.Name == group) {
			return s
		}
	}
	return nil
}

func rpoOf(e *srv1alpha1.RPOEvent) rpoView {
	v := rpoView{Namespace: e.Namespace, Name: e.Name, Group: e.Spec.ProtectionGroupRef.Name, Objective: e.Spec.RPOObjectiveSeconds,
		PeakLagSeconds: e.Status.PeakLagSeconds, Start: e.Spec.StartTime.Time, State: string(e.Status.State),
		AffectedVMs: e.Status.AffectedVMs, Message: e.Status.Message}
	if v.State == "" {
		v.State = string(srv1alpha1.RPOEventActive)
	}
	if e.Status.EndTime != nil {
		t := e.Status.EndTime.Time
		v.End = &t
	}
	return v
}

func history(h []srv1alpha1.PhaseTransition, end *metav1.Time, now time.Time) []stepView {
	out := make([]stepView, 0, len(h))
	for i, p := range h {
		next := now
		switch {
		case i+1 < len(h):
			next = h[i+1].Time.Time
		case end != nil:
			next = end.Time
		}
		d := next.Sub(p.Time.Time).Seconds()
		if d < 0 {
			d = 0
		}
		out = append(out, stepView{Phase: p.Phase, Time: p.Time.Time, Message: p.Message, DurationSeconds: d})
	}
	return out
}

func conditions(cs []metav1.Condition) []conditionView {
	out := make([]conditionView, 0, len(cs))
	for _, c := range cs {
		out = append(out, conditionView{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

func createdBy(m *metav1.ObjectMeta) string {
	if u := m.Annotations[requestedByAnnotation]; u != "" {
		return u
	}
	for _, f := range m.ManagedFields {
		if f.Operation == metav1.ManagedFieldsOperationUpdate || f.Operation == metav1.ManagedFieldsOperationApply {
			return f.Manager
		}
	}
	return ""
}

func duration(start, end *metav1.Time, created, now time.Time) float64 {
	from := created
	if start != nil {
		from = start.Time
	}
	to := now
	if end != nil {
		to = end.Time
	}
	return to.Sub(from).Seconds()
}

func failoverFinished(f *srv1alpha1.FailoverRequest) bool {
	return f.Status.Phase == srv1alpha1.FailoverCompleted || f.Status.Phase == srv1alpha1.FailoverFailed
}

func testFinished(t *srv1alpha1.TestFailover) bool {
	return t.Status.Phase == srv1alpha1.TestFailoverSucceeded || t.Status.Phase == srv1alpha1.TestFailoverFailed
}

func protectionFinished(p *srv1alpha1.ProtectionRequest) bool {
	return p.Status.Phase == srv1alpha1.ProtectionProtected || p.Status.Phase == srv1alpha1.ProtectionFailed
}

func failoverOf(f *srv1alpha1.FailoverRequest, now time.Time) operationView {
	typ := string(f.Spec.FailoverType)
	if typ == "" {
		typ = string(srv1alpha1.FailoverPlanned)
	}
	if f.Spec.Force {
		typ += " (forced)"
	}
	v := operationView{Kind: "FailoverRequest", Namespace: f.Namespace, Name: f.Name, Group: f.Spec.ProtectionGroupRef.Name,
		Type: typ, Target: f.Spec.TargetCluster, Source: f.Status.SourceCluster, Phase: phaseOr(string(f.Status.Phase)),
		Finished: failoverFinished(f), Succeeded: f.Status.Phase == srv1alpha1.FailoverCompleted,
		Created: f.CreationTimestamp.Time, CreatedBy: createdBy(&f.ObjectMeta),
		Duration: duration(f.Status.StartTime, f.Status.CompletionTime, f.CreationTimestamp.Time, now),
		Message:  f.Status.Message, History: history(f.Status.PhaseHistory, f.Status.CompletionTime, now),
		Conditions: conditions(f.Status.Conditions)}
	if c := condition(f.Status.Conditions, srv1alpha1.ConditionLockAcquired); c != nil {
		v.Lock = c.Reason + ": " + c.Message
		if c.Status == metav1.ConditionTrue {
			v.Lock = "acquired"
		}
	}
	for _, c := range f.Status.Conditions {
		if c.Reason == srv1alpha1.ReasonTaintConflict {
			v.Taints = c.Message
		}
	}
	if v.Taints == "" && v.Finished && v.Succeeded {
		v.Taints = "none"
	}
	v.Boot = bootOf(f.Status.Boot, stageSplit(f.Status.PhaseTimings), v.Kind, now)
	return v
}

func testOf(t *srv1alpha1.TestFailover, now time.Time) operationView {
	v := operationView{Kind: "TestFailover", Namespace: t.Namespace, Name: t.Name, Group: t.Spec.ProtectionGroupRef.Name,
		Type: "test", Target: t.Spec.TargetCluster, Phase: phaseOr(string(t.Status.Phase)), Finished: testFinished(t),
		Succeeded: t.Status.Phase == srv1alpha1.TestFailoverSucceeded, Created: t.CreationTimestamp.Time,
		CreatedBy: createdBy(&t.ObjectMeta), Duration: duration(t.Status.StartTime, t.Status.CompletionTime, t.CreationTimestamp.Time, now),
		History: history(t.Status.PhaseHistory, t.Status.CompletionTime, now), Conditions: conditions(t.Status.Conditions)}
	for _, r := range t.Status.Results {
		v.Checks = append(v.Checks, checkView{VM: r.VM, Check: r.Check, Passed: r.Passed, Message: r.Message})
	}
	if c := condition(t.Status.Conditions, srv1alpha1.ConditionReady); c != nil {
		v.Message = c.Message
	}
	v.Boot = bootOf(t.Status.Boot, nil, v.Kind, now)
	return v
}

func protectionOf(p *srv1alpha1.ProtectionRequest, now time.Time) operationView {
	v := operationView{Kind: "ProtectionRequest", Namespace: p.Namespace, Name: p.Name, Group: p.Spec.ProtectionGroupRef.Name,
		Type: "protect", Target: p.Spec.TargetCluster, VM: p.Spec.VirtualMachine.Namespace + "/" + p.Spec.VirtualMachine.Name,
		Phase: phaseOr(string(p.Status.Phase)), Finished: protectionFinished(p), Succeeded: p.Status.Phase == srv1alpha1.ProtectionProtected,
		Created: p.CreationTimestamp.Time, CreatedBy: createdBy(&p.ObjectMeta),
		Duration: duration(p.Status.StartTime, p.Status.CompletionTime, p.CreationTimestamp.Time, now),
		History:  history(p.Status.PhaseHistory, p.Status.CompletionTime, now), Conditions: conditions(p.Status.Conditions)}
	if c := condition(p.Status.Conditions, srv1alpha1.ConditionReady); c != nil {
		v.Message = c.Message
	}
	return v
}

func phaseOr(p string) string {
	if p == "" {
		return "Pending"
	}
	return p
}

// operationsOf lists every request of the snapshot, newest first.
func operationsOf(snap *snapshot, now time.Time, keep func(operationView) bool) []operationView {
	var out []operationView
	add := func(v operationView) {
		if keep == nil || keep(v) {
			out = append(out, v)
		}
	}
	for i := range snap.failover {
		add(failoverOf(&snap.failover[i], now))
	}
	for i := range snap.tests {
		add(testOf(&snap.tests[i], now))
	}
	for i := range snap.protects {
		add(protectionOf(&snap.protects[i], now))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	if out == nil {
		out = []operationView{}
	}
	return out
}
