package crdvalidation

// ramenCases are the examples for the dr.siterecovery.trilio.io group.
var ramenCases = []crdCase{
	{
		kind: "DRPolicy",
		valid: `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPolicy
metadata: {name: offloaded-0m}
spec:
  drClusters: [cluster-1, cluster-2]
  schedulingInterval: 0m
`,
		invalid: []invalidCase{
			{"interval without unit", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPolicy
metadata: {name: bad}
spec: {drClusters: [a, b], schedulingInterval: "5"}
`, []string{"spec.schedulingInterval", "should match"}},
			{"one cluster", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPolicy
metadata: {name: bad}
spec: {drClusters: [a], schedulingInterval: 5m}
`, []string{"spec.drClusters", "at least 2 items"}},
			{"three clusters", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPolicy
metadata: {name: bad}
spec: {drClusters: [a, b, c], schedulingInterval: 5m}
`, []string{"spec.drClusters", "at most 2 items"}},
			{"same cluster twice", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPolicy
metadata: {name: bad}
spec: {drClusters: [a, a], schedulingInterval: 5m}
`, []string{"spec.drClusters[1]", "Duplicate value"}},
		},
	},
	{
		kind: "DRPlacementControl",
		valid: `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPlacementControl
metadata:
  name: app-1
  annotations: {drplacementcontrol.ramendr.openshift.io/enable-diff: "true"}
spec:
  protectionGroupRef: {name: app-1}
  drPolicyRef: {name: offloaded-0m}
  pvcSelector: {matchLabels: {app: app-1}}
  preferredCluster: cluster-1
  failoverCluster: cluster-2
  action: Failover
`,
		invalid: []invalidCase{
			{"failover without failoverCluster", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPlacementControl
metadata: {name: bad}
spec:
  protectionGroupRef: {name: app-1}
  drPolicyRef: {name: p}
  pvcSelector: {}
  action: Failover
`, []string{"failoverCluster is required when action is Failover"}},
			{"relocate without preferredCluster", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPlacementControl
metadata: {name: bad}
spec:
  protectionGroupRef: {name: app-1}
  drPolicyRef: {name: p}
  pvcSelector: {}
  action: Relocate
`, []string{"preferredCluster is required when action is Relocate"}},
			{"unknown action", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPlacementControl
metadata: {name: bad}
spec:
  protectionGroupRef: {name: app-1}
  drPolicyRef: {name: p}
  pvcSelector: {}
  action: Move
`, []string{"spec.action", `supported values: "Failover", "Relocate"`}},
			{"no policy", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: DRPlacementControl
metadata: {name: bad}
spec:
  protectionGroupRef: {name: app-1}
  pvcSelector: {}
`, []string{"spec.drPolicyRef", "Required value"}},
		},
	},
	{
		kind: "VolumeReplicationGroup",
		valid: `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: VolumeReplicationGroup
metadata:
  name: app-1
  labels: {ramendr.openshift.io/global-vgr: global-replication-group-01}
spec:
  pvcSelector: {matchLabels: {app: app-1}}
  replicationState: primary
  action: Failover
  async: {schedulingInterval: 0m}
`,
		invalid: []invalidCase{
			{"capitalised state", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: VolumeReplicationGroup
metadata: {name: bad}
spec: {pvcSelector: {}, replicationState: Primary}
`, []string{"spec.replicationState", `supported values: "primary", "secondary"`}},
			{"bad interval", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: VolumeReplicationGroup
metadata: {name: bad}
spec: {pvcSelector: {}, replicationState: primary, async: {schedulingInterval: soon}}
`, []string{"spec.async.schedulingInterval", "should match"}},
			{"no state", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: VolumeReplicationGroup
metadata: {name: bad}
spec: {pvcSelector: {}}
`, []string{"spec.replicationState", "Required value"}},
		},
	},
	{
		kind: "ReplicationGroupSource",
		valid: `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupSource
metadata:
  name: app-1
  annotations: {drplacementcontrol.ramendr.openshift.io/enable-diff: "true"}
spec:
  trigger: {schedule: "*/5 * * * *"}
  volumeGroupSnapshotClassName: cephfs-vgsc
  volumeGroupSnapshotSource: {matchLabels: {ramendr.openshift.io/consistency-group: cg-1}}
`,
		invalid: []invalidCase{
			{"no snapshot class", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupSource
metadata: {name: bad}
spec: {volumeGroupSnapshotSource: {}}
`, []string{"spec.volumeGroupSnapshotClassName", "Required value"}},
			{"schedule and manual", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupSource
metadata: {name: bad}
spec:
  trigger: {schedule: "*/5 * * * *", manual: now}
  volumeGroupSnapshotClassName: c
  volumeGroupSnapshotSource: {}
`, []string{"set either schedule or manual, not both"}},
			{"bad cron", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupSource
metadata: {name: bad}
spec:
  trigger: {schedule: "every five minutes"}
  volumeGroupSnapshotClassName: c
  volumeGroupSnapshotSource: {}
`, []string{"spec.trigger.schedule", "should match"}},
		},
	},
	{
		kind: "ReplicationGroupDestination",
		valid: `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupDestination
metadata: {name: app-1}
spec:
  rdSpecs:
  - protectedPVC: {name: data, accessModes: [ReadWriteMany], resources: {requests: {storage: 10Gi}}}
`,
		invalid: []invalidCase{
			{"PVC without size", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupDestination
metadata: {name: bad}
spec:
  rdSpecs: [{protectedPVC: {name: data}}]
`, []string{"resources.requests.storage is required"}},
			{"PVC without name", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupDestination
metadata: {name: bad}
spec:
  rdSpecs:
  - protectedPVC: {name: "", resources: {requests: {storage: 1Gi}}}
`, []string{"spec.rdSpecs[0].protectedPVC.name", "at least 1 chars long"}},
			{"entry without PVC", `
apiVersion: dr.siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupDestination
metadata: {name: bad}
spec:
  rdSpecs: [{}]
`, []string{"spec.rdSpecs[0].protectedPVC", "Required value"}},
		},
	},
}
