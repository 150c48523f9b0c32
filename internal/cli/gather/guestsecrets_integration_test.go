package gather_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/cli/gather"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
)

// Guest secrets of the test VM, each distinct so that a leak names its kind.
const (
	userData    = "#cloud-config\npassword: guest-password-in-user-data\nssh_authorized_keys:\n  - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIUserDataKeyUserDataKeyUserDataKey guest@web\n"
	networkData = "version: 2\nethernets:\n  eth0:\n    addresses: [10.1.2.3/24]\n    wifi-psk: network-data-preshared-key-0123456789\n"
	driveUser   = "#cloud-config\nchpasswd: {list: 'root:config-drive-root-password-42'}\n"
	driveNet    = "version: 1\nconfig-drive-network-secret-material-abcdef0123\n"
	vmiUserData = "#cloud-config\npassword: password-in-the-running-vmi-777\n"
)

// refSecrets are Secrets the VM references by name (cloud-init, sysprep,
// access credentials), with values that must not reach the bundle.
var refSecrets = map[string]map[string]string{
	"web-userdata": {"userdata": "#cloud-config\npassword: referenced-user-data-secret-value"},
	"web-netdata":  {"networkdata": "referenced-network-data-secret-value"},
	"web-sysprep":  {"unattend.xml": "<AdministratorPassword>sysprep-admin-password-value</AdministratorPassword>"},
	"web-ssh":      {"key": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQReferencedSshKeyValue user@host"},
	"web-password": {"root": "access-credentials-user-password-value"},
}

// TestBundleRedactsGuestSecrets gathers a bundle, as kubectl siterecovery
// gather does, over a real quorum API server and a primary cluster whose
// protected VM carries every kind of guest secret: inline cloud-init user and
// network data (plain and base64, NoCloud and ConfigDrive), the same in
// kubectl's last-applied-configuration annotation and in its running VMI,
// an event quoting its network data, and Secrets it references for
// cloud-init, sysprep and access credentials. The bundle's bytes hold none of
// them; the fields and the referenced Secrets' names stay.
func TestBundleRedactsGuestSecrets(t *testing.T) {
	ctx := context.Background()
	z := harness.Start(t, harness.Options{Scheme: scheme.New()}, "quorum", "primary")
	quorum, primary := z.Clusters["quorum"], z.Clusters["primary"]
	const drNS, apps = "dr-production", "apps"
	create := func(c client.Client, o client.Object) {
		t.Helper()
		require.NoError(t, c.Create(ctx, o))
	}
	create(quorum.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: drNS}})
	create(quorum.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: drNS, Name: "primary-kubeconfig"},
		Data: map[string][]byte{srv1alpha1.KubeconfigSecretKey: primary.Kubeconfig}})
	create(quorum.Client, &srv1alpha1.ProtectionZone{ObjectMeta: metav1.ObjectMeta{Namespace: drNS, Name: "production"},
		Spec: srv1alpha1.ProtectionZoneSpec{StorageBackend: srv1alpha1.BackendDRBD, Clusters: []srv1alpha1.ZoneCluster{
			{Name: "primary-cluster", Role: srv1alpha1.ClusterRolePrimary, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "primary-kubeconfig"}},
			// The DR cluster's Secret is absent: the bundle notes it.
			{Name: "dr-cluster", Role: srv1alpha1.ClusterRoleDR, KubeconfigSecretRef: srv1alpha1.SecretKeyReference{Name: "dr-kubeconfig"}},
		}}})
	create(quorum.Client, &srv1alpha1.ProtectionGroup{ObjectMeta: metav1.ObjectMeta{Namespace: drNS, Name: "web"},
		Spec: srv1alpha1.ProtectionGroupSpec{ActiveCluster: "primary-cluster", ZoneRef: &srv1alpha1.LocalObjectReference{Name: "production"},
			VirtualMachines: []srv1alpha1.VirtualMachineReference{{Name: "web", Namespace: apps}}}})

	create(primary.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: apps}})
	for name, data := range refSecrets {
		create(primary.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: apps, Name: name}, StringData: data})
	}
	vm := guestVM(apps)
	applied, err := json.Marshal(vm)
	require.NoError(t, err)
	vm.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied)}
	create(primary.Client, vm)
	create(primary.Client, &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: apps, Name: "web"},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Disks: []kubevirtv1.Disk{{Name: "cloudinit"}}}},
			Volumes: []kubevirtv1.Volume{{Name: "cloudinit", VolumeSource: kubevirtv1.VolumeSource{
				CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: vmiUserData}}}}}})
	create(primary.Client, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: apps, Name: "web.cloudinit"},
		InvolvedObject: corev1.ObjectReference{Kind: "VirtualMachine", Namespace: apps, Name: "web"},
		Reason:         "GuestConfig", Type: corev1.EventTypeNormal, Message: "applied network data " + networkData,
		LastTimestamp: metav1.Now()})

	var out bytes.Buffer
	require.NoError(t, gather.Write(ctx, &out, gather.Input{Quorum: quorum.Client, QuorumConfig: quorum.Config,
		Scheme: scheme.New(), Namespace: drNS, Since: time.Hour}))
	files := untar(t, out.Bytes())
	vms := string(files["clusters/production/primary-cluster/apps/virtualmachines.yaml"])
	require.NotEmpty(t, vms, "the VM is in the bundle: %v", keys(files))
	require.NotEmpty(t, files["clusters/production/primary-cluster/apps/virtualmachineinstances.yaml"])
	assert.Contains(t, string(files["clusters/production/primary-cluster/apps/events.yaml"]), "applied network data "+gather.Redacted,
		"the event quoting the network data is kept, the data replaced")

	all := bytes.Join(values(files), nil)
	leaks := []string{userData, networkData, driveUser, driveNet, vmiUserData,
		"guest-password-in-user-data", "UserDataKeyUserDataKey", "network-data-preshared-key", "config-drive-root-password",
		"config-drive-network-secret-material", "password-in-the-running-vmi",
		b64(driveUser), b64(driveNet), b64(userData)}
	for _, data := range refSecrets {
		for _, v := range data {
			leaks = append(leaks, v, b64(v))
		}
	}
	for _, s := range leaks {
		assert.NotContains(t, string(all), s)
	}
	// The fields and the references stay: a reader sees what the VM uses.
	for _, want := range []string{"userData: '[REDACTED]'", "networkData: '[REDACTED]'", "userDataBase64: '[REDACTED]'",
		"networkDataBase64: '[REDACTED]'", "web-userdata", "web-netdata", "web-sysprep", "web-ssh", "web-password",
		"last-applied-configuration"} {
		assert.Contains(t, vms, want)
	}
}

// guestVM is a VM with each kind of guest secret KubeVirt takes.
func guestVM(ns string) *kubevirtv1.VirtualMachine {
	vol := func(name string, src kubevirtv1.VolumeSource) kubevirtv1.Volume {
		return kubevirtv1.Volume{Name: name, VolumeSource: src}
	}
	strategy := kubevirtv1.RunStrategyHalted
	return &kubevirtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &strategy, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{
				Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Disks: []kubevirtv1.Disk{
					{Name: "nocloud"}, {Name: "configdrive"}, {Name: "refs"}, {Name: "sysprep"}}}},
				Volumes: []kubevirtv1.Volume{
					vol("nocloud", kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{
						UserData: userData, NetworkData: networkData}}),
					vol("configdrive", kubevirtv1.VolumeSource{CloudInitConfigDrive: &kubevirtv1.CloudInitConfigDriveSource{
						UserDataBase64: b64(driveUser), NetworkDataBase64: b64(driveNet)}}),
					vol("refs", kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{
						UserDataSecretRef:    &corev1.LocalObjectReference{Name: "web-userdata"},
						NetworkDataSecretRef: &corev1.LocalObjectReference{Name: "web-netdata"}}}),
					vol("sysprep", kubevirtv1.VolumeSource{Sysprep: &kubevirtv1.SysprepSource{
						Secret: &corev1.LocalObjectReference{Name: "web-sysprep"}}}),
				},
				AccessCredentials: []kubevirtv1.AccessCredential{
					{SSHPublicKey: &kubevirtv1.SSHPublicKeyAccessCredential{
						Source:            kubevirtv1.SSHPublicKeyAccessCredentialSource{Secret: &kubevirtv1.AccessCredentialSecretSource{SecretName: "web-ssh"}},
						PropagationMethod: kubevirtv1.SSHPublicKeyAccessCredentialPropagationMethod{NoCloud: &kubevirtv1.NoCloudSSHPublicKeyAccessCredentialPropagation{}}}},
					{UserPassword: &kubevirtv1.UserPasswordAccessCredential{
						Source:            kubevirtv1.UserPasswordAccessCredentialSource{Secret: &kubevirtv1.AccessCredentialSecretSource{SecretName: "web-password"}},
						PropagationMethod: kubevirtv1.UserPasswordAccessCredentialPropagationMethod{QemuGuestAgent: &kubevirtv1.QemuGuestAgentUserPasswordAccessCredentialPropagation{}}}},
				},
			}}},
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// untar returns every file of a tar.gz bundle by its path below the bundle's
// top folder.
func untar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		_, rel, _ := bytes.Cut([]byte(h.Name), []byte("/"))
		out[string(rel)] = b
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func values(m map[string][]byte) [][]byte {
	var out [][]byte
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
