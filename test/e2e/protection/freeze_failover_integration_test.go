package protection_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/sim/guest"
	storagesim "github.com/siterecovery/siterecovery/test/sim/storage"
	"github.com/siterecovery/siterecovery/test/sim/virtapi"
)

// TestPlannedFailoverFreezesBeforeTheStop: a group that asks for application
// consistency, replicating with protocol A while its guest keeps writing
// records faster than the link carries them, is failed over planned: its
// guest is frozen (KubeVirt's freeze subresource, the virt-api simulator)
// until the DR replica drained, then stopped frozen, and the DR disk the
// target was promoted from holds every acknowledged record whole, none torn.
// The request records the Application point and shows the freeze in its
// timeline. Back again with the guest agent silent: the failover completes
// and its point is Crash, naming the VM. Once more to the DR cluster with
// the link stalled (checkStalledDrain): the drain outlasts the bound.
func TestPlannedFailoverFreezesBeforeTheStop(t *testing.T) {
	z := newZone(t)
	ctx, q, p := t.Context(), z.Client(env.Quorum), z.Client(env.Primary)
	// A small disk, so that the image is read whole and no write wraps
	// around it (guest.CheckImage).
	makeSizedPVC(t, p, "web-root", "16Mi")
	makeVM(t, p, "web", pvcVolume("rootdisk", "web-root"))
	env.Eventually(t, wait, "web running", vmRunning(t, p, "web"))
	vm := types.NamespacedName{Namespace: env.AppNS, Name: "web"}
	guests := guest.New()
	onPrimary, onDR := guest.NewCluster(env.Primary, p, z.fabric, z.devices), guest.NewCluster(env.DR, z.Client(env.DR), z.fabric, z.devices)
	virtapi.Start(t, z.Clusters[env.Primary], guests)
	virtapi.Start(t, z.Clusters[env.DR], guests)

	require.NoError(t, q.Create(ctx, newRequest("protect-web", "web"))) // protocol A, the default
	env.Eventually(t, wait, "protect-web Protected", phaseIs(ctx, q, "protect-web", srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "prod-pg"}, pg))
	require.Equal(t, srv1alpha1.ProtocolA, pg.Spec.Replication.Protocol)
	before := pg.DeepCopy()
	pg.Spec.Consistency = &srv1alpha1.ConsistencySpec{Mode: srv1alpha1.ConsistencyApplication, FreezeTimeoutSeconds: 20}
	require.NoError(t, q.Patch(ctx, pg, client.MergeFrom(before)))

	// The guest writes 320 KiB/s; the link carries 256 KiB/s: writes are in
	// flight when the failover freezes the guest.
	require.NoError(t, z.fabric.SetDrainRate(256<<10))
	w := startRecords(ctx, guests, onPrimary, vm)
	env.Eventually(t, wait, "the guest wrote records", func() error {
		if n := w.acked(); n < 200 {
			return fmt.Errorf("%d writes acknowledged", n)
		}
		return nil
	})
	start := time.Now()
	require.NoError(t, q.Create(ctx, newFailover("to-dr", env.DR, srv1alpha1.FailoverPlanned)))
	fr := waitCompleted(t, z, "to-dr")
	t.Logf("planned failover of an Application group: %v", time.Since(start).Round(time.Millisecond))
	w.stop()

	require.Equal(t, []string{"Pending", "FreezingOnSource", "StoppingOnSource", "WaitingForDRBD", "StartingOnTarget", "Completed"}, history(fr))
	pt := fr.Status.Consistency
	require.NotNil(t, pt, "the request records the point its target was promoted from")
	t.Logf("point: %s, frozen %v for %dms: %s", pt.Consistency, pt.FrozenVMs, pt.FrozenMilliseconds, pt.Message)
	require.Equal(t, srv1alpha1.ConsistencyApplication, pt.Consistency, pt.Message)
	require.Equal(t, "PlannedFailover", pt.Source)
	require.Equal(t, []string{vm.String()}, pt.FrozenVMs)
	require.Positive(t, pt.FrozenMilliseconds)
	require.Contains(t, timingPhases(fr), "FreezingOnSource", "phaseTimings shows the freeze")

	check := guests.CheckImage(vm, "rootdisk", drImage(t, z, "web-root"))
	t.Logf("DR image: %+v; %d writes acknowledged", check, w.acked())
	assert.Zero(t, check.TornRecords, "the target holds no torn record")
	assert.Positive(t, check.Records)
	assert.Equal(t, w.acked(), check.Writes, "every acknowledged write is on the target")

	// Back, with the guest agent silent: Crash, naming the VM; the failover
	// is not held.
	guests.SetAgent(vm, false)
	backAck, err := guests.Write(ctx, onDR, vm, 4)
	require.NoError(t, err, "the guest booted on the DR cluster is not frozen")
	require.NoError(t, q.Create(ctx, newFailover("back", env.Primary, srv1alpha1.FailoverPlanned)))
	back := waitCompleted(t, z, "back").Status.Consistency
	require.NotNil(t, back)
	t.Logf("point with the agent silent: %s %v: %s", back.Consistency, back.CrashConsistentVMs, back.Message)
	require.Equal(t, srv1alpha1.ConsistencyCrash, back.Consistency)
	require.Equal(t, []string{vm.String()}, back.CrashConsistentVMs)
	require.Contains(t, back.Message, "Guest agent is not responding")

	guests.SetAgent(vm, true)
	checkStalledDrain(t, z, guests, onPrimary, vm, w.acked()+backAck.Acknowledged)
}

// checkStalledDrain fails the group over to the DR cluster once more while
// the link carries nothing (the fabric's drain rate 0) and the freeze bound
// is 1 s: what the guest wrote before the freeze cannot drain within the
// bound. The failover is not held by it: the point is Crash and names the
// replica and what it still lacked. The target is not promoted on undrained
// data: the DR replica stays Secondary until the link carries the rest, and
// then every acknowledged write is on the target. before is the number of
// writes the DR image held before.
func checkStalledDrain(t *testing.T, z *zone, guests *guest.Guests, onPrimary *guest.Cluster, vm types.NamespacedName, before int) {
	t.Helper()
	ctx, q := t.Context(), z.Client(env.Quorum)
	pg := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "prod-pg"}, pg))
	patched := pg.DeepCopy()
	patched.Spec.Consistency.FreezeTimeoutSeconds = 1
	require.NoError(t, q.Patch(ctx, patched, client.MergeFrom(pg)))
	require.NoError(t, z.fabric.SetDrainRate(0)) // only Fabric.Drain delivers
	env.Eventually(t, wait, "web running on the primary", vmRunning(t, z.Client(env.Primary), "web"))
	w := startRecords(ctx, guests, onPrimary, vm)
	env.Eventually(t, wait, "the guest wrote records", func() error {
		if n := w.acked(); n < 40 {
			return fmt.Errorf("%d writes acknowledged", n)
		}
		return nil
	})
	require.NoError(t, q.Create(ctx, newFailover("stalled", env.DR, srv1alpha1.FailoverPlanned)))
	fr := &srv1alpha1.FailoverRequest{}
	env.Eventually(t, wait, "stalled: the point recorded", func() error {
		if err := q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "stalled"}, fr); err != nil {
			return err
		}
		if fr.Status.Consistency == nil {
			return fmt.Errorf("phase %s: %s", fr.Status.Phase, fr.Status.Message)
		}
		return nil
	})
	pt := fr.Status.Consistency
	t.Logf("point with the link stalled: %s: %s", pt.Consistency, pt.Message)
	require.Equal(t, srv1alpha1.ConsistencyCrash, pt.Consistency)
	require.Contains(t, pt.Message, "the DR replicas did not hold every write within the freeze bound of 1s")
	require.Contains(t, pt.Message, env.AppNS+"/vm-web: ")
	// What it lacked: the agent's reading of the writes in flight, or, when
	// the agent could not answer within the 1 s bound (a loaded machine),
	// that it did not.
	require.Regexp(t, `bytes of writes in flight|its agent has not answered the first request for DRBD's in-flight figures`, pt.Message)
	dr := &srv1alpha1.DRBDResource{}
	require.NoError(t, z.Client(env.DR).Get(ctx, client.ObjectKey{Namespace: env.AppNS, Name: "vm-web"}, dr))
	require.NotEqual(t, "Primary", dr.Status.Role, "the target is not promoted while the link holds the writes")
	require.NoError(t, q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "stalled"}, fr))
	require.NotContains(t, history(fr), "StartingOnTarget", "the target is not started while the link holds the writes")

	require.NoError(t, z.fabric.SetDrainRate(256<<10))
	fr = waitCompleted(t, z, "stalled")
	w.stop()
	t.Logf("stalled: %v", history(fr))
	check := guests.CheckImage(vm, "rootdisk", drImage(t, z, "web-root"))
	t.Logf("DR image: %+v; %d writes acknowledged", check, before+w.acked())
	assert.Equal(t, before+w.acked(), check.Writes, "every acknowledged write is on the target")
}

// records is a guest writing 4-block records every 50 ms, 3000 blocks at
// most (the 16 MiB disk holds 4096).
type records struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	n      int
}

func startRecords(ctx context.Context, g *guest.Guests, c *guest.Cluster, vm types.NamespacedName) *records {
	ctx, cancel := context.WithCancel(ctx)
	w := &records{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for w.acked() < 3000 {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			ack, _ := g.Write(ctx, c, vm, 4)
			w.mu.Lock()
			w.n += ack.Acknowledged
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *records) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func (w *records) stop() {
	w.cancel()
	<-w.done
}

// drImage is the DR cluster's copy of claim, as its replica holds it.
func drImage(t *testing.T, z *zone, claim string) []byte {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	require.NoError(t, z.Client(env.DR).Get(t.Context(), client.ObjectKey{Namespace: env.AppNS, Name: claim}, pvc))
	b, err := os.ReadFile(storagesim.DeviceFile(z.devices, pvc.Spec.VolumeName))
	require.NoError(t, err)
	return b
}

func history(fr *srv1alpha1.FailoverRequest) []string {
	var out []string
	for _, h := range fr.Status.PhaseHistory {
		out = append(out, h.Phase)
	}
	return out
}

func timingPhases(fr *srv1alpha1.FailoverRequest) []string {
	var out []string
	for _, pt := range fr.Status.PhaseTimings {
		out = append(out, pt.Phase)
	}
	return out
}

// makeSizedPVC creates a block PVC of size that the storage simulator binds,
// and waits for it.
func makeSizedPVC(t *testing.T, c client.Client, name, size string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
			StorageClassName: ptr.To("standard"),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	require.NoError(t, c.Create(t.Context(), pvc))
	env.Eventually(t, wait, "PVC "+name+" bound", func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("PVC %s is %q", name, pvc.Status.Phase)
		}
		return nil
	})
}
