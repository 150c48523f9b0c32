package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// TestFailoverPhase is a step of a test failover.
// +kubebuilder:validation:Enum=Pending;Snapshotting;Restoring;Booting;Verifying;CleaningUp;Succeeded;Failed
type TestFailoverPhase string

// Phases of a TestFailover, in order.
const (
	TestFailoverPending      TestFailoverPhase = "Pending"
	TestFailoverSnapshotting TestFailoverPhase = "Snapshotting"
	TestFailoverRestoring    TestFailoverPhase = "Restoring"
	TestFailoverBooting      TestFailoverPhase = "Booting"
	TestFailoverVerifying    TestFailoverPhase = "Verifying"
	TestFailoverCleaningUp   TestFailoverPhase = "CleaningUp"
	TestFailoverSucceeded    TestFailoverPhase = "Succeeded"
	TestFailoverFailed       TestFailoverPhase = "Failed"
)

// ProbeType is the kind of network probe a test failover runs.
// +kubebuilder:validation:Enum=TCP;HTTP
type ProbeType string

const (
	// ProbeTCP connects to a port.
	ProbeTCP ProbeType = "TCP"
	// ProbeHTTP sends a GET and expects a 2xx or 3xx answer.
	ProbeHTTP ProbeType = "HTTP"
)

// NetworkProbe is a check run from a Job in the isolated namespace.
// +kubebuilder:validation:XValidation:rule="self.type == 'HTTP' || !has(self.path)",message="path is only valid for HTTP probes"
type NetworkProbe struct {
	// type of the probe.
	// +required
	Type ProbeType `json:"type"`
	// port to probe on each test VM.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
	// path of an HTTP probe.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path,omitempty"`
	// timeoutSeconds bounds the probe.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// VerificationChecks are the checks run against every test VM.
type VerificationChecks struct {
	// vmReadyTimeoutSeconds bounds how long a test VM may take to become Ready.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	VMReadyTimeoutSeconds int32 `json:"vmReadyTimeoutSeconds,omitempty"`
	// guestAgent requires the guest agent to connect.
	// +optional
	GuestAgent bool `json:"guestAgent,omitempty"`
	// probe is an optional TCP or HTTP check.
	// +optional
	Probe *NetworkProbe `json:"probe,omitempty"`
}

// TestFailoverSpec asks for a non-disruptive test of a group's DR copies.
type TestFailoverSpec struct {
	// protectionGroupRef names the group to test.
	// +required
	ProtectionGroupRef ProtectionGroupReference `json:"protectionGroupRef"`
	// targetCluster is the DR cluster whose replicas are tested.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TargetCluster string `json:"targetCluster"`
	// isolatedNamespace is the namespace on the target where the test VMs run.
	// Defaults to "sr-test-<name>". It must not exist beforehand.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	IsolatedNamespace string `json:"isolatedNamespace,omitempty"`
	// timeoutSeconds bounds the whole test; on expiry it fails and cleans up.
	// +optional
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// checks to run.
	// +optional
	Checks VerificationChecks `json:"checks,omitempty"`
}

// CheckResult is the outcome of one check on one test VM.
type CheckResult struct {
	// vm is the name of the production VM the test VM was made from.
	// +required
	VM string `json:"vm"`
	// check is VMReady, GuestAgent or Probe.
	// +required
	Check string `json:"check"`
	// passed is the verdict.
	// +required
	Passed bool `json:"passed"`
	// message explains the verdict.
	// +optional
	Message string `json:"message,omitempty"`
	// time the verdict was reached.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// TestFailoverStatus is the progress and results of a test failover.
type TestFailoverStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is the current step.
	// +optional
	Phase TestFailoverPhase `json:"phase,omitempty"`
	// phaseHistory records when each phase was entered.
	// +optional
	// +listType=atomic
	PhaseHistory []PhaseTransition `json:"phaseHistory,omitempty"`
	// isolatedNamespace is the namespace actually used on the target.
	// +optional
	IsolatedNamespace string `json:"isolatedNamespace,omitempty"`
	// results of every check.
	// +optional
	// +listType=atomic
	Results []CheckResult `json:"results,omitempty"`
	// boot is how the test VMs started under the group's boot plan, stage by
	// stage: only the VMs of a stage that may run are started, and a stage
	// that does not succeed under onStageTimeout Stop leaves the later ones
	// unstarted (their VMReady check fails and names the stage). Without a
	// plan every test VM starts at once, in the implicit stage.
	// +optional
	Boot *BootStatus `json:"boot,omitempty"`

	// consistency is what the test's snapshots hold: Application when every
	// running source VM was frozen while they were cut.
	// +optional
	Consistency *ConsistencyPoint `json:"consistency,omitempty"`

	// startTime is when the test started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the test finished and was cleaned up.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// conditions: Ready, CleanedUp.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TestFailover boots snapshots of a group's DR copies in an isolated namespace on
// the DR cluster, verifies them and cleans up; production is never touched.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tfo
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.protectionGroupRef.name`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetCluster`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TestFailover struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the requested test.
	// +required
	Spec TestFailoverSpec `json:"spec"`
	// status is the progress and results.
	// +optional
	Status TestFailoverStatus `json:"status,omitempty"`
}

// TestFailoverList is a list of TestFailovers.
// +kubebuilder:object:root=true
type TestFailoverList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TestFailover `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TestFailover{}, &TestFailoverList{})
}
