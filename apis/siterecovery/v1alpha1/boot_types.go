package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BootPlan orders how a group's VMs start on the cluster that takes the group
// over: a database answers before the application servers that need it start.
// The local ProtectionGroup controller runs it wherever the group is asked to
// run, so planned and unplanned failover and failback all honour it.
type BootPlan struct {
	// stages start one after another, in the order listed. A VM of the group
	// that no stage names starts in a last, implicit stage called "remaining",
	// with the Ready gate.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Stages []BootStage `json:"stages,omitempty"`

	// onStageTimeout is what a stage that times out or whose step fails does
	// to the stages after it: Stop leaves them unstarted (their VMs stay
	// stopped, and the group reports which and why); Continue starts the next
	// stage anyway.
	// +optional
	// +kubebuilder:default=Stop
	OnStageTimeout StageTimeoutAction `json:"onStageTimeout,omitempty"`
}

// StageTimeoutAction is what follows a stage that timed out.
// +kubebuilder:validation:Enum=Stop;Continue
type StageTimeoutAction string

const (
	// StageTimeoutStop leaves the later stages unstarted.
	StageTimeoutStop StageTimeoutAction = "Stop"
	// StageTimeoutContinue starts the next stage.
	StageTimeoutContinue StageTimeoutAction = "Continue"
)

// ImplicitStageName is the stage of the VMs no stage names; no declared
// stage may take the name.
const ImplicitStageName = "remaining"

// BootStage is one step of a boot plan: its VMs start together, and the next
// stage waits until each passes the gate.
// +kubebuilder:validation:XValidation:rule="(has(self.virtualMachines) && size(self.virtualMachines) > 0) || has(self.selector)",message="a stage names its VMs by virtualMachines, selector, or both"
// +kubebuilder:validation:XValidation:rule="self.name != 'remaining'",message="the stage name remaining is the implicit stage of the VMs no stage names; choose another"
type BootStage struct {
	// name of the stage, unique in the plan.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// virtualMachines are group VMs this stage starts, each "name" (any
	// namespace of the group) or "namespace/name".
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:validation:items:MaxLength=317
	VirtualMachines []string `json:"virtualMachines,omitempty"`

	// selector takes the group VMs whose labels match it. A VM that an
	// earlier stage takes stays in that stage.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// gate is what each VM of the stage must pass before the next stage
	// starts.
	// +optional
	Gate BootGate `json:"gate,omitempty"`

	// timeoutSeconds bounds the stage from its start (its pre-start step
	// included) until every VM passed the gate and the post-start step ended.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// preStart runs before the stage's VMs start; they start once it
	// succeeded.
	// +optional
	PreStart *BootStep `json:"preStart,omitempty"`

	// postStart runs once every VM of the stage passed the gate; the next
	// stage starts once it succeeded.
	// +optional
	PostStart *BootStep `json:"postStart,omitempty"`
}

// BootGateType names what a boot gate checks.
// +kubebuilder:validation:Enum=Ready;GuestAgent;TCP;HTTP
type BootGateType string

const (
	// GateReady waits for the VMI's Ready condition.
	GateReady BootGateType = "Ready"
	// GateGuestAgent waits for the VMI's AgentConnected condition.
	GateGuestAgent BootGateType = "GuestAgent"
	// GateTCP waits until a probe connects to a port of the VM.
	GateTCP BootGateType = "TCP"
	// GateHTTP waits until a probe's GET of a path of the VM answers 2xx or 3xx.
	GateHTTP BootGateType = "HTTP"
)

// BootGate is the check a VM passes before the next stage starts.
// +kubebuilder:validation:XValidation:rule="!(self.type == 'TCP' || self.type == 'HTTP') || has(self.port)",message="a TCP or HTTP gate needs a port"
// +kubebuilder:validation:XValidation:rule="!has(self.path) || self.type == 'HTTP'",message="path applies to an HTTP gate only"
type BootGate struct {
	// type is Ready (the VMI's Ready condition), GuestAgent (the guest agent
	// connected), TCP or HTTP (a probe Job in the VM's namespace reaches
	// the VM's address). Every gate includes Ready.
	// +optional
	// +kubebuilder:default=Ready
	Type BootGateType `json:"type,omitempty"`
	// port of a TCP or HTTP gate.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
	// path of an HTTP gate.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path,omitempty"`
}

// BootStep is a Job run on the cluster that starts the group, in the
// namespace of the stage's first VM, under the restricted pod security
// profile (non-root, no privilege escalation, every capability dropped,
// RuntimeDefault seccomp), which the controller sets and the step cannot
// loosen. It succeeds when the Job completes.
type BootStep struct {
	// image of the step's one container.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`
	// command of the container; the image's entrypoint when empty.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Command []string `json:"command,omitempty"`
	// args of the container.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Args []string `json:"args,omitempty"`
	// env of the container, literal values only: a step that needs a
	// credential reads it from a Secret it mounts itself, never from the
	// group's spec.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Env []BootStepEnv `json:"env,omitempty"`
	// serviceAccountName the step's pod runs as, in that namespace; the
	// namespace's default when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// BootStepEnv is one environment variable of a boot step.
type BootStepEnv struct {
	// name of the variable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// value of the variable.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value,omitempty"`
}

// BootStagePhase is where one stage of a boot stands.
type BootStagePhase string

const (
	// StagePending means an earlier stage has not finished.
	StagePending BootStagePhase = "Pending"
	// StagePreStart means the pre-start step runs.
	StagePreStart BootStagePhase = "PreStart"
	// StageStarting means the stage's VMs were asked to run and are being gated.
	StageStarting BootStagePhase = "Starting"
	// StagePostStart means every VM passed the gate; the post-start step runs.
	StagePostStart BootStagePhase = "PostStart"
	// StageSucceeded means the stage is done and the next one may start.
	StageSucceeded BootStagePhase = "Succeeded"
	// StageTimedOut means the stage did not finish within its timeout.
	StageTimedOut BootStagePhase = "TimedOut"
	// StageFailed means a step of the stage failed.
	StageFailed BootStagePhase = "Failed"
	// StageSkipped means an earlier stage timed out or failed and the plan
	// stops there; the stage's VMs were not started.
	StageSkipped BootStagePhase = "Skipped"
)

// BootStatus is how the group's last start on this cluster went, stage by
// stage (workload copies). It is cleared when the group is asked to stop, so
// that the next start runs the plan from its first stage.
type BootStatus struct {
	// startTime is when the start began.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the last stage ended, whatever its outcome.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// stopped is true when a stage timed out or failed and the plan's
	// onStageTimeout is Stop: the later stages will not start.
	// +optional
	Stopped bool `json:"stopped,omitempty"`
	// stages in the order they run, the implicit one last.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=17
	Stages []BootStageStatus `json:"stages,omitempty"`
}

// BootStageStatus is one stage of a start.
type BootStageStatus struct {
	// name of the stage.
	// +required
	Name string `json:"name"`
	// phase of the stage.
	// +required
	Phase BootStagePhase `json:"phase"`
	// virtualMachines the stage starts, as "namespace/name".
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=500
	VirtualMachines []string `json:"virtualMachines,omitempty"`
	// waiting are the stage's VMs that have not passed the gate yet (or
	// never did, once the stage ended).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=500
	Waiting []string `json:"waiting,omitempty"`
	// startTime is when the stage began (its pre-start step included).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// vmsStartTime is when the stage's VMs were asked to run (after its
	// pre-start step).
	// +optional
	VMsStartTime *metav1.Time `json:"vmsStartTime,omitempty"`
	// completionTime is when the stage ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// message says what the stage waits for, or why it ended as it did.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Message string `json:"message,omitempty"`
}
