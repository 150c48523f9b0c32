package pgsync

// What pgsync does on the workload clusters, through internal/quorum/remote. The
// workload-control-plane chart grants these rules to the quorum-manager
// ServiceAccount of each DR namespace: namespace=workload-cluster rules cluster-wide
// (application namespaces are the VMs' own, and some are created on the fly),
// namespace=workload-dr-namespace rules in the DR namespace only. Add a marker here with
// every remote call of a new kind or verb; the integration zones built with
// minted kubeconfigs fail with Forbidden otherwise.
//
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=list;watch,namespace=workload-cluster
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get;create;patch;delete,namespace=workload-dr-namespace
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachines,verbs=get;list;watch;create;patch;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=create,namespace=workload-cluster
//
// Companion objects: read at the source, and their copies written and deleted
// on the other clusters (the workload chart's guard admits only copies that
// carry this DR namespace's label). Secrets are not here: the workload chart
// grants them only with quorumAccess.companionSecrets.
// +kubebuilder:rbac:groups=core,resources=configmaps;services,verbs=get;list;create;patch;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=instancetype.kubevirt.io,resources=virtualmachineinstancetypes;virtualmachinepreferences,verbs=get;list;create;patch;delete,namespace=workload-cluster
