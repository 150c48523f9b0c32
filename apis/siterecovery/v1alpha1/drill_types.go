package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// DrillSchedule has the product run test failovers of a group on a schedule
// and keep their results.
type DrillSchedule struct {
	// schedule is a five-field cron expression (minute hour day-of-month
	// month day-of-week), in UTC; no time zone prefix. The admission webhook
	// refuses one that does not parse.
	// +required
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^\S+(\s+\S+){4}$`
	Schedule string `json:"schedule"`

	// suspend stops new drills; a drill in progress runs to its end.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// template is the TestFailover each drill runs.
	// +required
	Template DrillTemplate `json:"template"`

	// keep is how many finished drills (TestFailovers) are kept, newest first.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Keep int32 `json:"keep,omitempty"`
}

// DrillTemplate is a TestFailover's spec without the group, which the drill
// fills in, and without the isolated namespace, which each drill names.
type DrillTemplate struct {
	// targetCluster is the DR cluster whose replicas are tested: a cluster
	// of the group's zone other than its active one (the admission webhook
	// checks; a drill due while the group runs there is skipped, saying so).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TargetCluster string `json:"targetCluster"`

	// timeoutSeconds bounds each drill.
	// +optional
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// checks each drill runs.
	// +optional
	Checks VerificationChecks `json:"checks,omitempty"`
}

// DrillResult is the outcome of a finished drill.
// +kubebuilder:validation:Enum=Passed;Failed
type DrillResult string

// Outcomes of a drill.
const (
	// DrillPassed: the drill's TestFailover Succeeded, every check passed.
	DrillPassed DrillResult = "Passed"
	// DrillFailed: the TestFailover Failed, or was deleted before it ended.
	DrillFailed DrillResult = "Failed"
)

// DrillLabel is the label that, on a TestFailover, names the ProtectionGroup
// whose scheduled drill created it. The drill controller deletes (retention) only
// TestFailovers that carry it and are owned by that group.
const DrillLabel = "siterecovery.trilio.io/drill"

// DrillScheduledTimeAnnotation is the annotation that, on a drill's
// TestFailover, holds the schedule slot (RFC 3339, UTC) it ran for.
const DrillScheduledTimeAnnotation = "siterecovery.trilio.io/drill-scheduled-time"

// DrillStatus is where the group's drills stand.
type DrillStatus struct {
	// observedGeneration is the group's generation nextScheduleTime was
	// computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// lastScheduleTime is when the last drill was started.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is when the next drill is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastSuccessfulTime is when the last drill that passed every check ended.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// lastDrill names the last drill (TestFailover) that finished.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	LastDrill string `json:"lastDrill,omitempty"`

	// lastResult is lastDrill's outcome.
	// +optional
	LastResult DrillResult `json:"lastResult,omitempty"`

	// active names the drill in progress.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Active string `json:"active,omitempty"`

	// message says why a drill was skipped or could not start, or how the
	// last one ended.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}
