// Module kubevirt-crds writes the KubeVirt VirtualMachine and
// VirtualMachineInstance CRDs of test/crds/thirdparty the way virt-operator
// builds them, from kubevirt.io/api's Go types (make kubevirt-crds). It is its
// own module so that controller-gen loads kubevirt.io/api with the
// Kubernetes API types KubeVirt's release was generated with, not the
// product's newer ones, and so that its dependencies never raise the product's.
module github.com/siterecovery/siterecovery/tools/kubevirt-crds

go 1.26.0

require (
	k8s.io/apiextensions-apiserver v0.34.3
	kubevirt.io/api v1.9.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/openshift/custom-resource-status v1.1.2 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	golang.org/x/net v0.49.0 // indirect
	golang.org/x/text v0.33.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/api v0.34.3 // indirect
	k8s.io/apimachinery v0.34.3 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/utils v0.0.0-20260319190234-28399d86e0b5 // indirect
	kubevirt.io/containerized-data-importer-api v1.64.0 // indirect
	kubevirt.io/controller-lifecycle-operator-sdk/api v0.2.4 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.3.2-0.20260122202528-d9cc6641c482 // indirect
)

// KubeVirt v1.9.0's go.mod replaces the Kubernetes modules with these
// versions; the schemas virt-operator embeds describe the embedded Kubernetes
// types (PVC specs, probes, volumes, affinity) at them.
replace (
	k8s.io/api => k8s.io/api v0.34.2
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.34.2
	k8s.io/apimachinery => k8s.io/apimachinery v0.34.2
)
