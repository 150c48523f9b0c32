package failover

// What failover does on the workload clusters, through internal/quorum/remote. The
// workload-control-plane chart grants these rules to the quorum-manager
// ServiceAccount of each DR namespace: namespace=workload-cluster rules cluster-wide
// (application namespaces are the VMs' own, and some are created on the fly),
// namespace=workload-dr-namespace rules in the DR namespace only. Add a marker here with
// every remote call of a new kind or verb; the integration zones built with
// minted kubeconfigs fail with Forbidden otherwise.
//
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=list;watch,namespace=workload-cluster
// spec.desiredState and spec.drbd of the group's copy: the DRBD role goes
// through the copy, and pg-controller sets it on the DRBDResources.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=protectiongroups,verbs=patch,namespace=workload-dr-namespace
// DRBDResources are read from the cache; patched only to set spec.fencedPeers
// once an operator confirmed the source fenced.
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=drbdresources,verbs=list;watch;patch,namespace=workload-cluster
// Only to remove the drbd.linbit.com/lost-quorum taint for a request with
// force beside another group; the node agents own the taint otherwise.
// +kubebuilder:rbac:groups=core,resources=nodes,verbs=get;patch,namespace=workload-cluster
// A planned failover of an Application group freezes the running source
// guests before their stop (freeze.go), and reads their DRBDResources, after
// asking a fresh reading (spec.statusRequest, the patch above), to see the
// DR replicas drained.
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get,namespace=workload-cluster
// +kubebuilder:rbac:groups=subresources.kubevirt.io,resources=virtualmachineinstances/freeze;virtualmachineinstances/unfreeze,verbs=update,namespace=workload-cluster
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=drbdresources,verbs=get,namespace=workload-cluster
