package testfailover

// What testfailover does on the workload clusters, through internal/quorum/remote. The
// workload-control-plane chart grants these rules to the quorum-manager
// ServiceAccount of each DR namespace: namespace=workload-cluster rules cluster-wide
// (application namespaces are the VMs' own, and some are created on the fly),
// namespace=workload-dr-namespace rules in the DR namespace only. Add a marker here with
// every remote call of a new kind or verb; the integration zones built with
// minted kubeconfigs fail with Forbidden otherwise.
//
// Only the isolated test namespace it creates, and deletes when it carries the test's label.
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get;create;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachines,verbs=get;list;watch;create;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get,namespace=workload-cluster
// +kubebuilder:rbac:groups=core,resources=persistentvolumeclaims,verbs=get;list;watch;create;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=core,resources=services,verbs=list;create;delete,namespace=workload-cluster
// Copies the group's companion objects into the isolated namespace
// (copyCompanions; Secrets need the workload chart's quorumAccess.companionSecrets).
// +kubebuilder:rbac:groups=core,resources=configmaps;services,verbs=get;list;create,namespace=workload-cluster
// +kubebuilder:rbac:groups=instancetype.kubevirt.io,resources=virtualmachineinstancetypes;virtualmachinepreferences,verbs=get;list;create,namespace=workload-cluster
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;create;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=list;create;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots,verbs=get;list;create;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshotcontents,verbs=get;list;create;delete,namespace=workload-cluster
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get,namespace=workload-cluster
// Picks each snapshot's class by its disk's CSI driver (snapshotClasses).
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshotclasses,verbs=list,namespace=workload-cluster
// +kubebuilder:rbac:groups=core,resources=persistentvolumes,verbs=get,namespace=workload-cluster
// Freezes the group's running guests on its source cluster while the snapshots are cut (cut).
// +kubebuilder:rbac:groups=subresources.kubevirt.io,resources=virtualmachineinstances/freeze;virtualmachineinstances/unfreeze,verbs=update,namespace=workload-cluster
// Reads the DR replicas of the group before snapshotting them (replicasUpToDate);
// under protocol A asks the source replicas for a fresh reading
// (spec.statusRequest) to see them drained during the freeze (consistency.go).
// +kubebuilder:rbac:groups=siterecovery.trilio.io,resources=drbdresources,verbs=get;patch,namespace=workload-cluster
