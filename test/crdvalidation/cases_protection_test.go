package crdvalidation

// protectionCases are the examples for the ProtectionZone and ProtectionGroup
// kinds of the siterecovery.trilio.io group, the two with the most rules.
var protectionCases = []crdCase{
	{
		kind: "ProtectionZone",
		valid: `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionZone
metadata: {name: production}
spec:
  displayName: Production
  storageBackend: DRBD
  clusters:
  - {name: primary-cluster, role: Primary, kubeconfigSecretRef: {name: primary-kubeconfig}}
  - {name: dr-cluster, role: DR, kubeconfigSecretRef: {name: dr-kubeconfig}}
  storageMappings:
  - {sourceStorageClass: fast, targetStorageClass: fast-dr}
  networkMappings:
  - sourceCluster: primary-cluster
    targetCluster: dr-cluster
    networks:
    - {source: storage, target: infra/dr-storage}
    podNetwork: infra/dr-pods
    macPolicy: Generate
  - sourceCluster: dr-cluster
    targetCluster: primary-cluster
    networks:
    - {source: infra/dr-storage, target: storage}
    macPolicy: Keep
  drbd:
    tls: {mode: Required, keyring: drbd, privateKey: "drbd:key", certificate: "drbd:cert"}
`,
		invalid: []invalidCase{
			{"replication TLS: a key name without mode Required, a private key without its certificate, a key name with a space", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionZone
metadata: {name: bad}
spec:
  storageBackend: DRBD
  clusters:
  - {name: a, role: Primary, kubeconfigSecretRef: {name: a}}
  - {name: b, role: DR, kubeconfigSecretRef: {name: b}}
  drbd:
    tls: {mode: Disabled, privateKey: "drbd key"}
`, []string{"keyring, privateKey and certificate need mode Required", "set privateKey and certificate together", "spec.drbd.tls.privateKey", "should match"}},
			{"network mapping of an unknown cluster, and to itself", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionZone
metadata: {name: bad}
spec:
  storageBackend: DRBD
  clusters:
  - {name: a, role: Primary, kubeconfigSecretRef: {name: a}}
  - {name: b, role: DR, kubeconfigSecretRef: {name: b}}
  networkMappings:
  - {sourceCluster: a, targetCluster: mars}
  - {sourceCluster: b, targetCluster: b}
`, []string{"networkMappings may name only clusters of spec.clusters", "sourceCluster and targetCluster must differ"}},
			{"network mapping with a bad network name and MAC policy", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionZone
metadata: {name: bad}
spec:
  storageBackend: DRBD
  clusters:
  - {name: a, role: Primary, kubeconfigSecretRef: {name: a}}
  - {name: b, role: DR, kubeconfigSecretRef: {name: b}}
  networkMappings:
  - sourceCluster: a
    targetCluster: b
    networks: [{source: "Storage Net", target: x}]
    macPolicy: Random
`, []string{"spec.networkMappings[0].networks[0].source", "should match", `supported values: "Keep", "Generate"`}},
			{"no DR cluster", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionZone
metadata: {name: bad}
spec:
  storageBackend: DRBD
  clusters:
  - {name: a, role: Primary, kubeconfigSecretRef: {name: a}}
  - {name: b, role: Primary, kubeconfigSecretRef: {name: b}}
`, []string{"exactly one cluster with role Primary", "at least one cluster with role DR"}},
			{"unknown backend", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionZone
metadata: {name: bad}
spec:
  storageBackend: Ceph
  clusters:
  - {name: a, role: Primary, kubeconfigSecretRef: {name: a}}
  - {name: b, role: DR, kubeconfigSecretRef: {name: b}}
`, []string{"spec.storageBackend", `supported values: "DRBD", "Offloaded", "VolSync"`}},
			{"one cluster only", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionZone
metadata: {name: bad}
spec:
  storageBackend: DRBD
  clusters:
  - {name: a, role: Primary, kubeconfigSecretRef: {name: a}}
`, []string{"spec.clusters", "at least 2 items"}},
			{"cluster name not a DNS label", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionZone
metadata: {name: bad}
spec:
  storageBackend: DRBD
  clusters:
  - {name: Primary_1, role: Primary, kubeconfigSecretRef: {name: a}}
  - {name: b, role: DR, kubeconfigSecretRef: {name: b}}
`, []string{"spec.clusters[0].name", "should match"}},
			{"zero QPS", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionZone
metadata: {name: bad}
spec:
  storageBackend: DRBD
  clusters:
  - {name: a, role: Primary, kubeconfigSecretRef: {name: a}, client: {qps: 0}}
  - {name: b, role: DR, kubeconfigSecretRef: {name: b}}
`, []string{"spec.clusters[0].client.qps", "greater than or equal to 1"}},
		},
	},
	{
		kind: "ProtectionGroup",
		valid: `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: production-pg}
spec:
  activeCluster: primary-cluster
  zoneRef: {name: production}
  desiredState: running
  replication: {protocol: C, rpoObjectiveSeconds: 60}
  virtualMachines:
  - {name: db, namespace: apps}
  - {name: web, namespace: apps}
  boot:
    stages:
    - {name: database, virtualMachines: [db], gate: {type: TCP, port: 5432}}
    - name: web
      selector: {matchLabels: {tier: web}}
      gate: {type: HTTP, port: 8080, path: /healthz}
      postStart: {image: registry.example.com/smoke:1, env: [{name: URL, value: "http://web"}]}
  companions:
    copySecrets: true
    objects:
    - {kind: ConfigMap, namespace: apps, name: shop-config}
    - {kind: Secret, namespace: apps, selector: {matchLabels: {app: shop}}}
    overrides:
    - {kind: ConfigMap, namespace: apps, name: shop-config, cluster: dr-cluster, mergePatch: {data: {DB_HOST: db.dr}}}
`,
		invalid: []invalidCase{
			{"companion with both name and selector", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {companions: {objects: [{kind: ConfigMap, namespace: apps, name: c, selector: {matchLabels: {a: b}}}]}}
`, []string{"spec.companions.objects[0]", "set exactly one of name and selector"}},
			{"override of a Secret", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {companions: {overrides: [{kind: Secret, namespace: apps, name: s, cluster: dr, mergePatch: {data: {}}}]}}
`, []string{"spec.companions", "a Secret takes no override"}},
			{"companion of a cluster-scoped kind", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {companions: {objects: [{kind: VirtualMachineClusterInstancetype, namespace: apps, name: c}]}}
`, []string{"spec.companions.objects[0].kind", "supported values"}},
			{"boot stage without VMs", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {boot: {stages: [{name: empty}]}}
`, []string{"spec.boot.stages[0]", "a stage names its VMs by virtualMachines, selector, or both"}},
			{"boot stage named remaining", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {boot: {stages: [{name: remaining, virtualMachines: [db]}]}}
`, []string{"spec.boot.stages[0]", "the stage name remaining is the implicit stage of the VMs no stage names; choose another"}},
			{"TCP gate without port", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {boot: {stages: [{name: database, virtualMachines: [db], gate: {type: TCP}}]}}
`, []string{"spec.boot.stages[0].gate", "a TCP or HTTP gate needs a port"}},
			{"path on a TCP gate", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {boot: {stages: [{name: database, virtualMachines: [db], gate: {type: TCP, port: 5432, path: /}}]}}
`, []string{"spec.boot.stages[0].gate", "path applies to an HTTP gate only"}},
			{"path on the default Ready gate", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {boot: {stages: [{name: web, virtualMachines: [web], gate: {path: /healthz}}]}}
`, []string{"spec.boot.stages[0].gate", "path applies to an HTTP gate only"}},
			{"unknown desired state", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {desiredState: paused}
`, []string{"spec.desiredState", `supported values: "running", "stopped"`}},
			{"same VM twice", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec:
  virtualMachines:
  - {name: db, namespace: apps}
  - {name: db, namespace: apps}
`, []string{"spec.virtualMachines[1]", "Duplicate value"}},
			{"zero RPO objective", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {replication: {rpoObjectiveSeconds: 0}}
`, []string{"spec.replication.rpoObjectiveSeconds", "greater than or equal to 1"}},
			{"protocol B", `
apiVersion: siterecovery.trilio.io/v1alpha1
kind: ProtectionGroup
metadata: {name: bad}
spec: {replication: {protocol: B}}
`, []string{"spec.replication.protocol", `supported values: "A", "C"`}},
		},
	},
}
