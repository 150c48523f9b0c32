package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// DrillSchedule has the product run test failovers of a group on a schedule
// and keep their results.
type DrillSchedule struct {
	// schedule is a five-field cron expression, in UTC.
	// +required
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=128
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
	// targetCluster is the DR cluster whose replicas are tested.
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

// DrillStatus is where the group's drills stand.
type DrillStatus struct {
	// lastScheduleTime is when the last drill was started.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is when the next drill is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastSuccessfulTime is when the last drill that passed every check ended.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// active names the drill in progress.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Active string `json:"active,omitempty"`

	// message says why a drill was skipped or could not start.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}
