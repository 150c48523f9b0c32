package protection

// What protection does on the workload clusters, through internal/quorum/remote. The
// workload-control-plane chart grants these rules to the quorum-manager
// ServiceAccount of each DR namespace: namespace=workload-cluster rules cluster-wide
// (application namespaces are the VMs' own, and some are created on the fly),
// namespace=workload-dr-namespace rules in the DR namespace only. Add a marker here with
// every remote call of a new kind or verb; the integration zones built with
// minted kubeconfigs fail with Forbidden otherwise.
//
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=list;watch,namespace=workload-cluster
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=get,namespace=workload-dr-namespace
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=drbdresources,verbs=get;list;watch;create;patch;delete,namespace=workload-cluster
// Claiming ports and minors in the cluster's one DRBDAllocation (the first claimer creates it).
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=drbdallocations,verbs=get;create;update,namespace=workload-cluster
// +kubebuilder:rbac:groups=core,resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=core,resources=persistentvolumes,verbs=get;list;create;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch;create;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=create,namespace=workload-cluster
// Reading the nodes' addresses and taints; failover alone patches them.
// +kubebuilder:rbac:groups=core,resources=nodes,verbs=get;list,namespace=workload-cluster
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachines,verbs=get;list;watch;patch,namespace=workload-cluster
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get,namespace=workload-cluster
