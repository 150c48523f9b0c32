package validate

// need is one permission quorum-manager uses on a workload cluster.
type need struct {
	group, resource string
	// namespaced resources are checked in the DR namespace and the VMs' namespaces.
	namespaced bool
	verbs      []string
}

var (
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	readOnly  = []string{"get", "list", "watch"}
)

// workloadNeeds are the rights the identity of a zone's kubeconfig Secret needs
// on its workload cluster: the objects the quorum controllers read and write
// there (group copies, DRBD resources, VMs and their disks, nodes' taints, the
// test failover's namespace, snapshots and probe jobs).
var workloadNeeds = []need{
	{"siterecovery.trilio.io", "protectiongroups", true, readWrite},
	{"siterecovery.trilio.io", "drbdresources", true, readWrite},
	{"kubevirt.io", "virtualmachines", true, readWrite},
	{"kubevirt.io", "virtualmachineinstances", true, readOnly},
	{"", "persistentvolumeclaims", true, readWrite},
	{"", "pods", true, readWrite},
	{"", "persistentvolumes", false, readWrite},
	{"", "nodes", false, []string{"get", "list", "watch", "patch"}},
	{"", "namespaces", false, []string{"get", "create", "delete"}},
	{"storage.k8s.io", "storageclasses", false, readOnly},
	{"snapshot.storage.k8s.io", "volumesnapshots", true, readWrite},
	{"snapshot.storage.k8s.io", "volumesnapshotclasses", false, readOnly},
	{"batch", "jobs", true, []string{"get", "list", "watch", "create", "delete"}},
}

// quorumResources are the kinds the CLI reads on the quorum cluster, and
// workloadResources those pg-controller and the agent serve on workload
// clusters, in the version this CLI was built with.
var (
	quorumResources   = []string{"protectionzones", "protectiongroups", "failoverrequests", "protectionrequests", "replicationgroupstatuses", "rpoevents", "testfailovers"}
	workloadResources = []string{"protectiongroups", "drbdresources"}
)
