package mover_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/harness"
	"github.com/siterecovery/siterecovery/test/sim/blockstore"
	"github.com/siterecovery/siterecovery/test/sim/mover"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

const (
	ns      = "apps"
	keyName = "key"
	class   = "cephfs"
	wait    = time.Minute
)

// pair is a source cluster and a destination cluster with the mover and the
// storage simulator on each.
type pair struct {
	t        *testing.T
	src, dst client.Client
	mover    *mover.Mover
	data     *blockstore.Store
}

// startPair starts both clusters; with mcs the ServiceExport CRD is served.
func startPair(t *testing.T, mcs bool) *pair {
	t.Helper()
	paths := harness.DefaultCRDPaths()
	if mcs {
		paths = append(paths, filepath.Join(harness.RepoRoot(), "test", "crds", "mcs"))
	}
	z := harness.Start(t, harness.Options{CRDDirectoryPaths: paths, Scheme: scheme.New()}, harness.Primary, harness.DR)
	p := &pair{t: t, data: blockstore.New(4096, 64)}
	p.mover = mover.New(p.data)
	for _, name := range []string{harness.Primary, harness.DR} {
		mgr, err := ctrl.NewManager(z.Clusters[name].Config, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
			Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
		require.NoError(t, err)
		require.NoError(t, storagesim.SetupWithManager(mgr, storagesim.Options{}))
		require.NoError(t, p.mover.SetupWithManager(mgr, name))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
		c := z.Clusters[name].Client
		require.NoError(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		require.NoError(t, c.Create(t.Context(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "cephfs.csi.ceph.com"}))
		require.NoError(t, c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: keyName},
			Data: map[string][]byte{mover.PSKKey: []byte("volsync:test")}}))
	}
	p.src, p.dst = z.Clusters[harness.Primary].Client, z.Clusters[harness.DR].Client
	return p
}

func pvc(name string, mode corev1.PersistentVolumeMode) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), VolumeMode: ptr.To(mode),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// destination creates a PVC of mode on the destination cluster and an RD
// receiving into it, and returns the address the RD publishes.
func (p *pair) destination(name string, mode corev1.PersistentVolumeMode) string {
	p.t.Helper()
	require.NoError(p.t, p.dst.Create(p.t.Context(), pvc(name, mode)))
	require.NoError(p.t, p.dst.Create(p.t.Context(), &volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: volsyncv1alpha1.ReplicationDestinationSpec{RsyncTLS: &volsyncv1alpha1.ReplicationDestinationRsyncTLSSpec{
			ReplicationDestinationVolumeOptions: volsyncv1alpha1.ReplicationDestinationVolumeOptions{
				CopyMethod: volsyncv1alpha1.CopyMethodDirect, DestinationPVC: ptr.To(name)},
			KeySecret: ptr.To(keyName)}}}))
	var address string
	p.eventually("the address of ReplicationDestination "+name, func() error {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		if err := p.dst.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rd); err != nil {
			return err
		}
		if rd.Status == nil || rd.Status.RsyncTLS == nil || ptr.Deref(rd.Status.RsyncTLS.Address, "") == "" {
			return fmt.Errorf("status %+v", rd.Status)
		}
		address = *rd.Status.RsyncTLS.Address
		return nil
	})
	return address
}

// source creates a PVC of mode with data on the source cluster and an RS
// sending it to address on trigger 1.
func (p *pair) source(name string, mode corev1.PersistentVolumeMode, address string) {
	p.t.Helper()
	require.NoError(p.t, p.src.Create(p.t.Context(), pvc(name, mode)))
	p.eventually("PVC "+name+" bound", func() error {
		c := &corev1.PersistentVolumeClaim{}
		if err := p.src.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return err
		}
		if c.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("phase %q", c.Status.Phase)
		}
		p.data.Fill(c.Spec.VolumeName, 7)
		return nil
	})
	require.NoError(p.t, p.src.Create(p.t.Context(), &volsyncv1alpha1.ReplicationSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: volsyncv1alpha1.ReplicationSourceSpec{SourcePVC: name,
			Trigger: &volsyncv1alpha1.ReplicationSourceTriggerSpec{Manual: "1"},
			RsyncTLS: &volsyncv1alpha1.ReplicationSourceRsyncTLSSpec{KeySecret: ptr.To(keyName), Address: ptr.To(address),
				ReplicationSourceVolumeOptions: volsyncv1alpha1.ReplicationSourceVolumeOptions{CopyMethod: volsyncv1alpha1.CopyMethodDirect}}}}))
}

// retarget points the RS at address and triggers it with manual.
func (p *pair) retarget(name, address, manual string) {
	p.t.Helper()
	p.eventually("retarget "+name, func() error {
		rs := &volsyncv1alpha1.ReplicationSource{}
		if err := p.src.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rs); err != nil {
			return err
		}
		rs.Spec.RsyncTLS.Address = ptr.To(address)
		rs.Spec.Trigger.Manual = manual
		return p.src.Update(context.Background(), rs)
	})
}

// failed waits until the RS's mover failed with a log containing part, as
// VolSync reports a failed mover, and requires that nothing was sent.
func (p *pair) failed(name, part string) {
	p.t.Helper()
	p.eventually("ReplicationSource "+name+" failing with "+part, func() error {
		rs := &volsyncv1alpha1.ReplicationSource{}
		if err := p.src.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rs); err != nil {
			return err
		}
		if rs.Status == nil {
			return fmt.Errorf("no status")
		}
		m := rs.Status.LatestMoverStatus
		if m == nil || m.Result != volsyncv1alpha1.MoverResultFailed || !strings.Contains(m.Logs, part) {
			return fmt.Errorf("mover status %+v", m)
		}
		return nil
	})
	require.Empty(p.t, p.mover.Transfers(ns, name), "a refused sync moves nothing")
}

// synced waits until the RS reports manual synced.
func (p *pair) synced(name, manual string) {
	p.t.Helper()
	p.eventually("ReplicationSource "+name+" synced "+manual, func() error {
		rs := &volsyncv1alpha1.ReplicationSource{}
		if err := p.src.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rs); err != nil {
			return err
		}
		if rs.Status == nil || rs.Status.LastManualSync != manual {
			return fmt.Errorf("status %+v", rs.Status)
		}
		return nil
	})
}

func (p *pair) eventually(what string, cond func() error) {
	p.t.Helper()
	deadline := time.Now().Add(wait)
	var last error
	for time.Now().Before(deadline) {
		if last = cond(); last == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("timed out waiting for %s: %v", what, last)
}

// A source reaches its destination only at the address the destination
// publishes: the clusterset name, which nothing exports here (the cluster
// has no MCS API at all), does not answer.
func TestSourceReachesOnlyThePublishedAddress(t *testing.T) {
	p := startPair(t, false)
	published := p.destination("disk", corev1.PersistentVolumeFilesystem)
	require.NotEqual(t, mover.ClusterSetAddress(ns, "disk"), published, "the published address is the Service's, not a clusterset name")
	p.source("disk", corev1.PersistentVolumeFilesystem, mover.ClusterSetAddress(ns, "disk"))
	p.failed("disk", "cannot connect to "+mover.ClusterSetAddress(ns, "disk"))
	p.retarget("disk", published, "2")
	p.synced("disk", "2")
}

// The clusterset name of a destination answers while a ServiceExport of its
// Service exists on the destination's cluster, and only then.
func TestClusterSetNameAnswersWhileExported(t *testing.T) {
	p := startPair(t, true)
	p.destination("disk", corev1.PersistentVolumeFilesystem)
	name := mover.ClusterSetAddress(ns, "disk")
	p.source("disk", corev1.PersistentVolumeFilesystem, name)
	p.failed("disk", "cannot connect to "+name)

	se := &unstructured.Unstructured{}
	se.SetGroupVersionKind(mover.ServiceExportGVK)
	se.SetNamespace(ns)
	se.SetName(mover.ServiceName("disk"))
	require.NoError(t, p.dst.Create(t.Context(), se))
	p.retarget("disk", name, "2")
	p.synced("disk", "2")

	require.NoError(t, p.dst.Delete(t.Context(), se))
	p.retarget("disk", name, "3")
	p.eventually("the sync after the export went to fail", func() error {
		rs := &volsyncv1alpha1.ReplicationSource{}
		if err := p.src.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "disk"}, rs); err != nil {
			return err
		}
		if rs.Status == nil {
			return fmt.Errorf("no status")
		}
		if m := rs.Status.LatestMoverStatus; m == nil || m.Result != volsyncv1alpha1.MoverResultFailed {
			return fmt.Errorf("mover status %+v", m)
		}
		return nil
	})
	require.Len(t, p.mover.Transfers(ns, "disk"), 1, "only the exported sync moved data")
}

// A Block source is refused by a Filesystem destination, and the reverse,
// as VolSync's movers fail them; alike modes sync.
func TestVolumeModeMismatchFailsTheSync(t *testing.T) {
	p := startPair(t, false)
	blockToFS := p.destination("block-to-fs", corev1.PersistentVolumeFilesystem)
	p.source("block-to-fs", corev1.PersistentVolumeBlock, blockToFS)
	p.failed("block-to-fs", "a Block source cannot be received into a Filesystem destination")

	fsToBlock := p.destination("fs-to-block", corev1.PersistentVolumeBlock)
	p.source("fs-to-block", corev1.PersistentVolumeFilesystem, fsToBlock)
	p.failed("fs-to-block", "a Filesystem source cannot be received into a Block destination")

	blocks := p.destination("block", corev1.PersistentVolumeBlock)
	p.source("block", corev1.PersistentVolumeBlock, blocks)
	p.synced("block", "1")
}
