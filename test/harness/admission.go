package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// kubeadmAdmissionPlugins are enabled on top of kube-apiserver's default set
// (which already holds NamespaceLifecycle, LimitRanger, ServiceAccount,
// TaintNodesByCondition, PodSecurity, Priority, DefaultTolerationSeconds,
// DefaultStorageClass, StorageObjectInUseProtection, PersistentVolumeClaimResize,
// RuntimeClass, the certificate plugins, DefaultIngressClass, the admission
// policy and webhook plugins and ResourceQuota; see
// k8s.io/kubernetes pkg/kubeapiserver/options/plugins.go, DefaultOffAdmissionPlugins):
//   - NodeRestriction, which kubeadm adds (cmd/kubeadm/app/phases/controlplane/manifests.go);
//   - OwnerReferencesPermissionEnforcement: an owner reference with
//     blockOwnerDeletion needs the right to update the owner's finalizers
//     (plugin/pkg/admission/gc/gc_admission.go), which hardened clusters
//     enable and a product must not need cluster-admin to pass.
var kubeadmAdmissionPlugins = []string{"NodeRestriction", "OwnerReferencesPermissionEnforcement"}

// bareAPIServerOff are the default plugins a bare API server (no controller
// manager, no nodes) runs without, each with the reason. Everything else is on
// for every cluster; a ControlPlane cluster turns none off.
var bareAPIServerOff = map[string]string{
	"ServiceAccount": "it refuses every pod of a namespace until the ServiceAccount " +
		"controller has created the namespace's default ServiceAccount, and no controller manager runs",
	"StorageObjectInUseProtection": "it puts the kubernetes.io/pvc-protection and pv-protection " +
		"finalizers on every claim and volume, which only the controller manager's protection controllers remove",
	"TaintNodesByCondition": "it taints every new Node not-ready, a taint only the node " +
		"lifecycle controller removes",
}

// podSecurityDefaults is the PodSecurity admission configuration: namespaces
// without pod-security.kubernetes.io labels enforce baseline and warn and
// audit against restricted (pod-security.admission.config.k8s.io/v1
// PodSecurityConfiguration). The product's own pods must pass restricted;
// the agent's namespace carries the privileged label its chart documents.
const podSecurityDefaults = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      enforce-version: latest
      audit: restricted
      audit-version: latest
      warn: restricted
      warn-version: latest
    exemptions:
      usernames: []
      runtimeClasses: []
      namespaces: []
`

// configureAdmission sets the admission plugins and writes their
// configuration under dir.
func configureAdmission(args *envtest.Arguments, dir string, controlPlane bool) error {
	config := filepath.Join(dir, "admission-config.yaml")
	if err := os.WriteFile(config, []byte(podSecurityDefaults), 0o600); err != nil {
		return fmt.Errorf("writing the admission configuration: %w", err)
	}
	args.Set("admission-control-config-file", config)
	args.Set("enable-admission-plugins", strings.Join(kubeadmAdmissionPlugins, ","))
	if controlPlane {
		// envtest turns ServiceAccount off by default; a control plane runs it.
		args.Disable("disable-admission-plugins")
	} else {
		args.Set("disable-admission-plugins", strings.Join(BareAPIServerDisabledPlugins(), ","))
	}
	return nil
}

// BareAPIServerDisabledPlugins names the admission plugins a bare API server
// runs without (their reasons are in bareAPIServerOff), sorted.
func BareAPIServerDisabledPlugins() []string {
	names := make([]string, 0, len(bareAPIServerOff))
	for n := range bareAPIServerOff {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
