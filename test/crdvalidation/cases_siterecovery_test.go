package crdvalidation

// siterecoveryCases are the examples for the siterecovery.trilio.io group.
var siterecoveryCases = []crdCase{
	{
		kind: "ProtectionRequest",
		valid: `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionRequest
metadata: {name: protect-db}
spec:
  virtualMachine: {name: db, namespace: apps}
  zoneRef: {name: production}
  protectionGroupRef: {name: production-pg}
  targetCluster: dr-cluster
`,
		invalid: []invalidCase{
			{"VM without namespace", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionRequest
metadata: {name: bad}
spec:
  virtualMachine: {name: db}
  zoneRef: {name: production}
  protectionGroupRef: {name: production-pg}
`, []string{"spec.virtualMachine.namespace", "Required value"}},
			{"no zone", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionRequest
metadata: {name: bad}
spec:
  virtualMachine: {name: db, namespace: apps}
  protectionGroupRef: {name: production-pg}
`, []string{"spec.zoneRef", "Required value"}},
			{"zero sync timeout", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionRequest
metadata: {name: bad}
spec:
  virtualMachine: {name: db, namespace: apps}
  zoneRef: {name: production}
  protectionGroupRef: {name: production-pg}
  initialSyncTimeoutSeconds: 0
`, []string{"spec.initialSyncTimeoutSeconds", "greater than or equal to 1"}},
		},
	},
	{
		kind: "FailoverRequest",
		// The documented planned-failover manifest, verbatim but for the namespace the test uses.
		valid: `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: FailoverRequest
metadata:
  name: planned-failover-prod
spec:
  protectionGroupRef:
    name: production-pg
    namespace: dr-production
  targetCluster: dr-cluster
  failoverType: planned
  drainTimeoutSeconds: 120
  batchBootTimeoutSeconds: 300
`,
		invalid: []invalidCase{
			{"empty target", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: FailoverRequest
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  targetCluster: ""
`, []string{"spec.targetCluster", "at least 1 chars long"}},
			{"zero drain timeout", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: FailoverRequest
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  targetCluster: dr-cluster
  drainTimeoutSeconds: 0
`, []string{"spec.drainTimeoutSeconds", "greater than or equal to 1"}},
			{"negative boot timeout", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: FailoverRequest
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  targetCluster: dr-cluster
  batchBootTimeoutSeconds: -5
`, []string{"spec.batchBootTimeoutSeconds", "greater than or equal to 1"}},
			{"unknown failover type", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: FailoverRequest
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  targetCluster: dr-cluster
  failoverType: emergency
`, []string{"spec.failoverType", `supported values: "planned", "unplanned"`}},
			{"no group", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: FailoverRequest
metadata: {name: bad}
spec:
  targetCluster: dr-cluster
`, []string{"spec.protectionGroupRef", "Required value"}},
		},
	},
	{
		kind: "TestFailover",
		valid: `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: TestFailover
metadata: {name: quarterly-test}
spec:
  protectionGroupRef: {name: production-pg}
  targetCluster: dr-cluster
  timeoutSeconds: 1800
  checks:
    vmReadyTimeoutSeconds: 300
    guestAgent: true
    probe: {type: HTTP, port: 8080, path: /healthz}
`,
		invalid: []invalidCase{
			{"path on a TCP probe", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: TestFailover
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  targetCluster: dr-cluster
  checks: {probe: {type: TCP, port: 22, path: /x}}
`, []string{"spec.checks.probe", "path is only valid for HTTP probes"}},
			{"port zero", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: TestFailover
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  targetCluster: dr-cluster
  checks: {probe: {type: TCP, port: 0}}
`, []string{"spec.checks.probe.port", "greater than or equal to 1"}},
			{"zero timeout", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: TestFailover
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  targetCluster: dr-cluster
  timeoutSeconds: 0
`, []string{"spec.timeoutSeconds", "greater than or equal to 1"}},
			{"no target", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: TestFailover
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
`, []string{"spec.targetCluster", "Required value"}},
		},
	},
	{
		kind: "ReplicationGroupStatus",
		valid: `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupStatus
metadata: {name: production-pg}
spec:
  protectionGroupRef: {name: production-pg}
  rpoObjectiveSeconds: 120
  pollingIntervalSeconds: 30
`,
		invalid: []invalidCase{
			{"zero polling interval", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupStatus
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  pollingIntervalSeconds: 0
`, []string{"spec.pollingIntervalSeconds", "greater than or equal to 1"}},
			{"negative RPO", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupStatus
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  rpoObjectiveSeconds: -5
`, []string{"spec.rpoObjectiveSeconds", "greater than or equal to 1"}},
			{"no group", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ReplicationGroupStatus
metadata: {name: bad}
spec: {pollingIntervalSeconds: 30}
`, []string{"spec.protectionGroupRef", "Required value"}},
		},
	},
	{
		kind: "RPOEvent",
		valid: `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: RPOEvent
metadata: {name: production-pg-1}
spec:
  protectionGroupRef: {name: production-pg}
  rpoObjectiveSeconds: 120
  startTime: "2026-11-29T10:00:00Z"
`,
		invalid: []invalidCase{
			{"no start time", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: RPOEvent
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  rpoObjectiveSeconds: 120
`, []string{"spec.startTime", "Required value"}},
			{"zero objective", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: RPOEvent
metadata: {name: bad}
spec:
  protectionGroupRef: {name: production-pg}
  rpoObjectiveSeconds: 0
  startTime: "2026-11-29T10:00:00Z"
`, []string{"spec.rpoObjectiveSeconds", "greater than or equal to 1"}},
			{"empty group name", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: RPOEvent
metadata: {name: bad}
spec:
  protectionGroupRef: {name: ""}
  rpoObjectiveSeconds: 10
  startTime: "2026-11-29T10:00:00Z"
`, []string{"spec.protectionGroupRef.name", "at least 1 chars long"}},
		},
	},
	{
		kind: "DRBDAllocation",
		valid: `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDAllocation
metadata: {name: default}
spec:
  claims:
  - {requestUID: 6b1f0c1e-1, drNamespace: dr-production, request: protect-db, port: 7000, minors: [1000, 1001], claimedAt: "2026-11-29T10:00:00Z"}
  - {requestUID: 6b1f0c1e-2, drNamespace: dr-staging, request: protect-web, port: 7001, minors: [1002], claimedAt: "2026-11-29T10:00:00Z"}
`,
		invalid: []invalidCase{
			{"port out of range", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDAllocation
metadata: {name: bad-port}
spec:
  claims: [{requestUID: u1, drNamespace: dr-production, port: 8000, claimedAt: "2026-11-29T10:00:00Z"}]
`, []string{"spec.claims[0].port", "less than or equal to 7999"}},
			{"two claims of one request", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDAllocation
metadata: {name: bad-uid}
spec:
  claims:
  - {requestUID: u1, drNamespace: dr-production, port: 7000, claimedAt: "2026-11-29T10:00:00Z"}
  - {requestUID: u1, drNamespace: dr-production, port: 7001, claimedAt: "2026-11-29T10:00:00Z"}
`, []string{"spec.claims[1]", "Duplicate value"}},
			{"a claim without its DR namespace", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDAllocation
metadata: {name: bad-ns}
spec:
  claims: [{requestUID: u1, port: 7000, claimedAt: "2026-11-29T10:00:00Z"}]
`, []string{"spec.claims[0].drNamespace", "Required value"}},
			{"a minor twice", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDAllocation
metadata: {name: bad-minor}
spec:
  claims: [{requestUID: u1, drNamespace: dr-production, port: 7000, minors: [1000, 1000], claimedAt: "2026-11-29T10:00:00Z"}]
`, []string{"spec.claims[0].minors[1]", "Duplicate value"}},
		},
	},
	{
		kind: "DRBDResource",
		valid: `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDResource
metadata: {name: vm-db}
spec:
  nodeName: worker-1
  nodeID: 0
  port: 7001
  protocol: A
  role: Primary
  volumes:
  - {number: 0, minor: 1000, disk: rootdisk, backingPVC: {name: db-root}}
  - {number: 1, minor: 1001, disk: data, backingPVC: {name: db-data}, metaPVC: {name: db-data-drbdmeta}}
  peers:
  - {nodeName: dr-worker-1, nodeID: 1, address: 192.0.2.10, port: 7001, cluster: dr-cluster}
`,
		invalid: []invalidCase{
			{"port out of range", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDResource
metadata: {name: bad}
spec:
  nodeName: worker-1
  nodeID: 0
  port: 6999
  volumes: [{number: 0, minor: 1000, backingPVC: {name: d0}}]
`, []string{"spec.port", "greater than or equal to 7000"}},
			{"a volume names a device, not a claim", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDResource
metadata: {name: bad}
spec:
  nodeName: worker-1
  nodeID: 0
  port: 7000
  volumes: [{number: 0, minor: 1000, devicePath: /dev/sda}]
`, []string{"spec.volumes[0].backingPVC", "Required value"}},
			{"peer reuses the local node id", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDResource
metadata: {name: bad}
spec:
  nodeName: worker-1
  nodeID: 0
  port: 7000
  volumes: [{number: 0, minor: 1000, backingPVC: {name: d0}}]
  peers: [{nodeName: dr-1, nodeID: 0, address: 192.0.2.10, port: 7000}]
`, []string{"peers must not use the local nodeID"}},
			{"duplicate peer node ids", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDResource
metadata: {name: bad}
spec:
  nodeName: worker-1
  nodeID: 0
  port: 7000
  volumes: [{number: 0, minor: 1000, backingPVC: {name: d0}}]
  peers:
  - {nodeName: dr-1, nodeID: 1, address: 192.0.2.10, port: 7000}
  - {nodeName: dr-2, nodeID: 1, address: 192.0.2.11, port: 7000}
`, []string{"peer nodeIDs must be unique"}},
			{"no volumes", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDResource
metadata: {name: bad}
spec:
  nodeName: worker-1
  nodeID: 0
  port: 7000
  volumes: []
`, []string{"spec.volumes", "at least 1 items"}},
			{"duplicate minors", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDResource
metadata: {name: bad}
spec:
  nodeName: worker-1
  nodeID: 0
  port: 7000
  volumes: [{number: 0, minor: 1000, backingPVC: {name: d0}}, {number: 1, minor: 1000, backingPVC: {name: d1}}]
`, []string{"volume minors must be unique"}},
			{"peer address not an IP", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDResource
metadata: {name: bad}
spec:
  nodeName: worker-1
  nodeID: 0
  port: 7000
  volumes: [{number: 0, minor: 1000, backingPVC: {name: d0}}]
  peers: [{nodeName: dr-1, nodeID: 1, address: dr-1.example.com, port: 7000}]
`, []string{"spec.peers[0].address", "must be an IPv4 or IPv6 address"}},
			{"forced promotion of a secondary", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: DRBDResource
metadata: {name: bad}
spec:
  nodeName: worker-1
  nodeID: 0
  port: 7000
  role: Secondary
  forcePromotion: true
  volumes: [{number: 0, minor: 1000, backingPVC: {name: d0}}]
`, []string{"forcePromotion requires role Primary"}},
		},
	},
}
