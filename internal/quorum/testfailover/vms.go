package testfailover

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"sort"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
)

// podNetwork is the only network of a test VM.
const podNetwork = "default"

// booting starts the test VMs under the group's boot plan (advanceBoot): a
// test VM is created, running, once its stage may start, and each started VM
// has vmReadyTimeoutSeconds from then to be Ready; the VMReady results are
// recorded here. A VM the plan never started fails VMReady with the stage
// that stopped it. Without a plan every test VM starts at once.
func (r *Reconciler) booting(ctx context.Context, s *scope) (ctrl.Result, error) {
	rc, err := r.dr(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	claims, err := r.restoredClaims(ctx, s, rc)
	if err != nil {
		return ctrl.Result{}, err
	}
	cluster := s.tf.Spec.TargetCluster
	names := sortedKeys(claims)
	vms := map[string]*kubevirtv1.VirtualMachine{}
	for _, name := range names {
		if err := r.ensureProbeService(ctx, s, rc, name); err != nil {
			return ctrl.Result{}, err
		}
		vm := &kubevirtv1.VirtualMachine{}
		switch err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: s.namespace(), Name: name}, vm); {
		case err == nil:
			vms[name] = vm
		case !apierrors.IsNotFound(err):
			return ctrl.Result{}, remoteErr(cluster, "reading test VM "+name, err)
		}
	}
	if len(vms) < len(names) {
		// Before the next test VM is created: it finds its companions there.
		if err := r.copyCompanions(ctx, s, rc); err != nil {
			return ctrl.Result{}, err
		}
	}
	boot, err := r.advanceBoot(ctx, s, rc, names, vms)
	if err != nil {
		return ctrl.Result{}, err
	}
	after := boot.After
	var waiting []string
	started := 0
	for _, name := range names {
		key := s.namespace() + "/" + name
		start := vmsStart(boot.Status, key)
		if start == nil {
			if boot.Status.CompletionTime != nil {
				s.record(name, CheckVMReady, false, "%s", notStarted(boot.Status, key))
			}
			continue
		}
		started++
		vm := vms[name]
		if vm == nil {
			standby := &kubevirtv1.VirtualMachine{}
			if err := rc.Direct.Get(ctx, client.ObjectKey{Namespace: s.vmRef(name), Name: name}, standby); err != nil {
				return ctrl.Result{}, remoteErr(cluster, "reading standby VM "+name, err)
			}
			if err := checkHookSidecars(ctx, s, rc, standby); err != nil {
				return ctrl.Result{}, err
			}
			vm, err = testVM(s, standby, claims[name])
			if err != nil {
				return ctrl.Result{}, err
			}
			if err := rc.Direct.Create(ctx, vm); err != nil && !apierrors.IsAlreadyExists(err) {
				return ctrl.Result{}, remoteErr(cluster, "creating test VM "+name, err)
			}
		}
		left := start.Add(s.vmReadyTimeout()).Sub(s.now)
		switch {
		case vm.Status.Ready:
			s.record(name, CheckVMReady, true, "test VM %s/%s is Ready (%s)", s.namespace(), name, vm.Status.PrintableStatus)
		case left <= 0:
			s.record(name, CheckVMReady, false, "test VM %s/%s was not Ready within vmReadyTimeoutSeconds=%d (status %q)",
				s.namespace(), name, int(s.vmReadyTimeout().Seconds()), vm.Status.PrintableStatus)
		case !s.recorded(name, CheckVMReady):
			waiting = append(waiting, name)
			if after == 0 || left < after {
				after = left
			}
		}
	}
	if msg := bootUnderWay(boot.Status); msg != "" {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, after, "%s", msg)
	}
	if len(waiting) > 0 {
		return ctrl.Result{}, flow.Waiting(srv1alpha1.ReasonProgressing, after, "waiting for test VM(s) %s to be Ready", strings.Join(waiting, ", "))
	}
	s.trail.Enter(srv1alpha1.TestFailoverVerifying, "%d of %d test VM(s) started; running the checks", started, len(names))
	return ctrl.Result{}, nil
}

// vmRef is the namespace of a group VM on the workload clusters.
func (s *scope) vmRef(name string) string {
	if s.group != nil {
		for _, ref := range s.group.Spec.VirtualMachines {
			if ref.Name == name {
				return ref.Namespace
			}
		}
	}
	return ""
}

// restoredClaims maps each VM to its volumes' restored PVCs, from the snapshot
// copies in the isolated namespace.
func (r *Reconciler) restoredClaims(ctx context.Context, s *scope, rc *remote.Remote) (map[string]map[string]string, error) {
	if err := r.reload(ctx, s); err != nil {
		return nil, err
	}
	list := &snapshotv1.VolumeSnapshotList{}
	if err := rc.Direct.List(ctx, list, client.InNamespace(s.namespace()), client.MatchingLabels{LabelUID: string(s.tf.UID)}); err != nil {
		return nil, remoteErr(s.tf.Spec.TargetCluster, "listing VolumeSnapshots", err)
	}
	out := map[string]map[string]string{}
	for _, vs := range list.Items {
		vm := vs.Annotations[annotationVM]
		if out[vm] == nil {
			out[vm] = map[string]string{}
		}
		out[vm][vs.Annotations[annotationVolume]] = vs.Name
	}
	if len(out) == 0 {
		return nil, invalid(srv1alpha1.ReasonSnapshotFailed, "no restored snapshot left in %s", s.namespace())
	}
	return out, nil
}

// testVM is a copy of a standby VM for the isolated namespace: it runs, its disks
// are the restored PVCs, it has a fresh firmware UUID and fresh MAC addresses,
// and its only network is the pod network (multus and bridge networks and their
// annotations are dropped), so it cannot reach or impersonate production. Its
// other template annotations are kept, hook sidecars too: checkHookSidecars
// refuses the test before a copy would need them dropped (hooks.go).
func testVM(s *scope, standby *kubevirtv1.VirtualMachine, claims map[string]string) (*kubevirtv1.VirtualMachine, error) {
	spec := *standby.Spec.DeepCopy()
	if spec.Template == nil {
		return nil, invalid(srv1alpha1.ReasonInvalidSpec, "standby VM %s has no template", standby.Name)
	}
	spec.Running = nil
	spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyAlways)
	spec.DataVolumeTemplates = nil
	tmpl := spec.Template
	tmpl.ObjectMeta.Labels = maps.Clone(tmpl.ObjectMeta.Labels)
	if tmpl.ObjectMeta.Labels == nil {
		tmpl.ObjectMeta.Labels = map[string]string{}
	}
	maps.Copy(tmpl.ObjectMeta.Labels, componentLabels(s.tf, standby.Name, ComponentVM))
	tmpl.ObjectMeta.Annotations = withoutNetworkAnnotations(tmpl.ObjectMeta.Annotations)

	for i := range tmpl.Spec.Volumes {
		v := &tmpl.Spec.Volumes[i]
		if claimOf(*v) == "" {
			continue
		}
		restored, ok := claims[v.Name]
		if !ok {
			return nil, invalid(srv1alpha1.ReasonSnapshotFailed, "disk %s of VM %s has no restored snapshot (the standby changed during the test?)", v.Name, standby.Name)
		}
		v.VolumeSource = kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: restored}}}
	}

	var networks []kubevirtv1.Network
	kept := map[string]bool{}
	for _, n := range tmpl.Spec.Networks {
		if n.Pod != nil && len(networks) == 0 {
			networks = append(networks, n)
			kept[n.Name] = true
		}
	}
	var ifaces []kubevirtv1.Interface
	for _, ifc := range tmpl.Spec.Domain.Devices.Interfaces {
		if kept[ifc.Name] {
			ifc.Bridge = nil
			ifc.SRIOV = nil
			ifc.InterfaceBindingMethod = kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}
			ifaces = append(ifaces, ifc)
		}
	}
	if len(ifaces) == 0 {
		networks = []kubevirtv1.Network{*kubevirtv1.DefaultPodNetwork()}
		ifaces = []kubevirtv1.Interface{{Name: podNetwork,
			InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}}}
	}
	for i := range ifaces {
		mac, err := freshMAC()
		if err != nil {
			return nil, err
		}
		ifaces[i].MacAddress = mac
	}
	tmpl.Spec.Networks = networks
	tmpl.Spec.Domain.Devices.Interfaces = ifaces

	fw := tmpl.Spec.Domain.Firmware
	if fw == nil {
		fw = &kubevirtv1.Firmware{}
		tmpl.Spec.Domain.Firmware = fw
	}
	fw.UUID = uuid.NewUUID()
	fw.Serial = ""

	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace(), Name: standby.Name, Labels: labelsOf(s.tf, standby.Name),
			Annotations: map[string]string{annotationVM: standby.Namespace + "/" + standby.Name}},
		Spec: spec,
	}, nil
}

// withoutNetworkAnnotations drops the multus annotations that attach production
// networks to the launcher pod.
func withoutNetworkAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if !strings.HasPrefix(k, "k8s.v1.cni.cncf.io/") && !strings.HasPrefix(k, "v1.multus-cni.io/") {
			out[k] = v
		}
	}
	return out
}

// freshMAC is a random locally administered unicast MAC address.
func freshMAC() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	b[0] = (b[0] | 0x02) &^ 0x01
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5]), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
