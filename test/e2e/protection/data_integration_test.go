package protection_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
	"github.com/siterecovery/siterecovery/test/sim/guest"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
)

// TestEveryAcknowledgedWriteSurvives protects a VM whose guest keeps writing,
// fails it over to the DR cluster and back, and removes protection, checking
// the guest's data by content after each step: every write the guest saw
// acknowledged reads back, none is lost or corrupt, and the DR copy equals the
// primary byte for byte. Volumes are sparse files the DRBD simulator reads and
// writes; DRBD's metadata must land on the metadata PVCs, never in the disks.
func TestEveryAcknowledgedWriteSurvives(t *testing.T) {
	z := newZone(t)
	ctx := t.Context()
	q, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)
	vm, guests, onPrimary, onDR := runDB(t, z)
	_, err := guests.Write(ctx, onPrimary, vm, 64)
	require.NoError(t, err, "the guest writes its raw disks before protection")
	// The safety recorder's data invariant: wherever the VM starts in these
	// planned flows, every acknowledged write reads back.
	vmis := faultmatrix.WatchVMIs(t, ctx, scheme.New(), env.AppNS, map[string]*rest.Config{
		env.Primary: z.Clusters[env.Primary].Config, env.DR: z.Clusters[env.DR].Config})
	data := faultmatrix.CheckData(ctx, vmis, guests, map[string]*guest.Cluster{env.Primary: onPrimary, env.DR: onDR}, vm)

	// The initial sync of the two 1 GiB disks takes a few seconds, under the
	// running VM; protocol A's writes in flight reach the peer as a network
	// would carry them.
	require.NoError(t, z.fabric.SetSyncRate(512<<10))
	require.NoError(t, z.fabric.SetDrainRate(64<<10))
	w := startWriter(ctx, guests, onPrimary, vm)
	require.NoError(t, q.Create(ctx, newRequest("protect-db", "db")))
	env.Eventually(t, wait, "protect-db Protected", phaseIs(ctx, q, "protect-db", srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	acked, outages := w.stop()
	require.NoError(t, z.fabric.SetSyncRate(1<<30))
	t.Logf("protect: %d writes acknowledged while protecting; the VM was down %v (%d outage(s))", acked, outages, len(outages))
	assert.LessOrEqual(t, len(outages), 1, "a protect costs the VM at most one restart")

	res := verify(t, guests, onPrimary, vm)
	assert.Equal(t, 64+acked, res.Acknowledged)
	require.NoError(t, z.fabric.Drain(srv1alpha1.DRBDResourceName("db")))
	for _, claim := range []string{"db-root", "db-data"} {
		assert.Equal(t, contents(t, p, z.devices, claim), contents(t, d, z.devices, claim),
			"the DR copy of %s equals the primary's byte for byte", claim)
	}

	// Planned failover to the DR cluster: the VM boots there on its replica.
	planned(t, z, "to-dr", env.DR)
	verify(t, guests, onDR, vm)
	_, err = guests.Write(ctx, onDR, vm, 32)
	require.NoError(t, err, "the VM writes on the DR cluster")
	_, err = guests.Write(ctx, onPrimary, vm, 1)
	require.ErrorIs(t, err, guest.ErrNotRunning, "the VM runs on one cluster only")

	// And back.
	planned(t, z, "to-primary", env.Primary)
	verify(t, guests, onPrimary, vm)
	_, err = guests.Write(ctx, onPrimary, vm, 32)
	require.NoError(t, err)

	// Removing protection gives the VM back its own disks, with every write
	// made through DRBD.
	require.NoError(t, q.Delete(ctx, getRequest(t, q, "protect-db")))
	env.Eventually(t, wait, "protect-db gone", gone(q, "protect-db"))
	env.Eventually(t, wait, "db runs on its own disks", func() error {
		v := &kubevirtv1.VirtualMachine{}
		if err := p.Get(ctx, vm, v); err != nil {
			return err
		}
		for _, vol := range v.Spec.Template.Spec.Volumes {
			if c := vol.PersistentVolumeClaim; c != nil && c.ClaimName != "db-root" && c.ClaimName != "db-data" {
				return fmt.Errorf("disk %s names %s", vol.Name, c.ClaimName)
			}
		}
		return vmRunning(t, p, "db")()
	})
	res = verify(t, guests, onPrimary, vm)
	assert.Equal(t, 64+acked+32+32, res.Acknowledged)
	checks := data.Checks()
	t.Logf("data invariant, at each start of the VM: %v", checks)
	assert.Empty(t, data.Losses(), "no acknowledged write lost or corrupt where the VM started")
	assert.GreaterOrEqual(t, len(checks), 4, "checked at each start: before or after the protect's restart, on the DR cluster, back on the primary, and on its own disks")
	assert.Empty(t, vmis.Overlaps(), "the VM ran on one cluster at a time")
}

// runDB runs VM apps/db on the primary with two 1 GiB block disks, and
// returns it with a guest and the guest's view of each cluster.
func runDB(t *testing.T, z *zone) (vm types.NamespacedName, guests *guest.Guests, onPrimary, onDR *guest.Cluster) {
	t.Helper()
	p := z.Client(env.Primary)
	makePVC(t, p, "db-root", "standard", corev1.PersistentVolumeBlock)
	makePVC(t, p, "db-data", "standard", corev1.PersistentVolumeBlock)
	makeVM(t, p, "db", pvcVolume("rootdisk", "db-root"), pvcVolume("datadisk", "db-data"))
	env.Eventually(t, wait, "db running", vmRunning(t, p, "db"))
	return types.NamespacedName{Namespace: env.AppNS, Name: "db"}, guest.New(),
		guest.NewCluster(env.Primary, p, z.fabric, z.devices), guest.NewCluster(env.DR, z.Client(env.DR), z.fabric, z.devices)
}

// verify checks that every acknowledged write of vm reads back on cluster c.
func verify(t *testing.T, g *guest.Guests, c *guest.Cluster, vm types.NamespacedName) guest.Result {
	t.Helper()
	var res guest.Result
	env.Eventually(t, wait, "the guest's data reads back on "+c.Name(), func() error {
		var err error
		if res, err = g.Verify(t.Context(), c, vm); err != nil {
			return err
		}
		return nil
	})
	t.Logf("verify on %s: %s", c.Name(), res)
	assert.Zero(t, res.Lost, "lost writes on %s", c.Name())
	assert.Zero(t, res.Corrupt, "corrupt writes on %s", c.Name())
	assert.Equal(t, res.Acknowledged, res.Intact)
	return res
}

// planned fails the group over to target with a planned FailoverRequest and
// waits until it completed.
func planned(t *testing.T, z *zone, name, target string) {
	t.Helper()
	require.NoError(t, z.Client(env.Quorum).Create(t.Context(), newFailover(name, target, srv1alpha1.FailoverPlanned)))
	waitCompleted(t, z, name)
}

// contents is a digest of a claim's volume file on a cluster.
func contents(t *testing.T, c client.Client, devices, claim string) string {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: env.AppNS, Name: claim}, pvc))
	f, err := os.Open(storagesim.DeviceFile(devices, pvc.Spec.VolumeName))
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// writer is a guest that keeps writing until stopped, and records when the VM
// could not take writes.
type writer struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	acked   int
	outages []time.Duration
}

func startWriter(ctx context.Context, g *guest.Guests, c *guest.Cluster, vm types.NamespacedName) *writer {
	ctx, cancel := context.WithCancel(ctx)
	w := &writer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var down time.Time
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			ack, err := g.Write(ctx, c, vm, 4)
			w.mu.Lock()
			w.acked += ack.Acknowledged
			switch {
			case err == nil && !down.IsZero():
				w.outages = append(w.outages, time.Since(down).Round(time.Millisecond))
				down = time.Time{}
			case (errors.Is(err, guest.ErrNotRunning) || errors.Is(err, guest.ErrIO)) && down.IsZero():
				down = time.Now()
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// stop ends the writes and returns how many were acknowledged and each time
// the VM was down.
func (w *writer) stop() (int, []time.Duration) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked, w.outages
}
