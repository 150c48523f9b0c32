package drpc

// What drpc does on the workload clusters, through internal/quorum/remote. The
// workload-control-plane chart grants these rules to the quorum-manager
// ServiceAccount of each DR namespace: namespace=workload-cluster rules cluster-wide
// (application namespaces are the VMs' own, and some are created on the fly),
// namespace=workload-dr-namespace rules in the DR namespace only. Add a marker here with
// every remote call of a new kind or verb; the integration zones built with
// minted kubeconfigs fail with Forbidden otherwise.
//
// +kubebuilder:rbac:groups=dr.siterecovery.trilio.io,resources=volumereplicationgroups,verbs=list;watch;create;patch;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=list;watch,namespace=workload-cluster
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=patch,namespace=workload-dr-namespace
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=create;patch,namespace=workload-dr-namespace
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get,namespace=workload-cluster
