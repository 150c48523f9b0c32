package admission

// What the admission webhooks read on the workload clusters, through
// internal/quorum/remote. The workload-control-plane chart grants these rules
// to the quorum-manager ServiceAccount of each DR namespace (namespace=
// workload-cluster: cluster-wide, the VMs' namespaces are the applications').
//
// The ProtectionGroup webhook looks up the NetworkAttachmentDefinitions a
// group's VMs need on each target cluster (network mapping, issue 42).
//
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list,namespace=workload-cluster
