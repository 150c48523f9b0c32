package protection_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
	"github.com/siterecovery/siterecovery/test/faultmatrix"
)

// matrixRecovery bounds how long a request may take to end once its fault is
// healed.
const matrixRecovery = 2 * time.Minute

// TestProtectionFaultMatrix runs the cells of the protection fault matrix
// (matrix_cells_test.go) that this run covers, on one zone, each on a VM of
// its own. A protect cell injects its fault the moment the request is seen
// entering its phase; an unprotect cell protects the VM, deletes the request
// and injects the fault at its point of the removal. While the fault lasts
// the request is never Failed and always says why it waits (a Ready reason);
// after the heal it ends Protected, or the removal completes with the VM
// running on the primary on its original volumes, nothing of the request left
// on either cluster and its claim released. Over the whole run, no VM ran on
// both clusters at once.
func TestProtectionFaultMatrix(t *testing.T) {
	// Every cell has been seen to pass: a nil filter draws from the whole
	// matrix. A new fault gets a filter until its cells have.
	cells, seed := faultmatrix.Pick(allCells(), nil, ciCells)
	faultmatrix.Announce(t, cells, seed)
	z := newMatrixZone(t)
	vmis := faultmatrix.RecordVMIs(t, t.Context(), z.Scheme, env.AppNS, map[string]*rest.Config{
		env.Primary: z.Clusters[env.Primary].Config, env.DR: z.Clusters[env.DR].Config})
	m := &matrix{zone: z, top: t}
	var results []cellResult
	for i, c := range cells {
		t.Run(fmt.Sprintf("%02d %s", i, c), func(t *testing.T) {
			results = append(results, m.run(t, c, fmt.Sprintf("vm-%02d", i)))
		})
	}
	t.Log("\n" + matrixTable(results))
	require.Empty(t, vmis.Overlaps(), "a VM ran on two clusters at once")
	require.Positive(t, vmis.Events(), "the VM recorder saw the run")
}

type matrix struct {
	*zone
	top *testing.T
}

// cellResult is what one cell showed, for the table.
type cellResult struct {
	cell cell
	// landed is the phase the protect request was in when the fault landed,
	// or the Ready reason of a removal.
	landed string
	// held is what the request said while the fault lasted: the last Ready
	// reason seen, or how it ended.
	held     string
	outcome  string
	recovery time.Duration
}

func (m *matrix) run(t *testing.T, c cell, vm string) cellResult {
	p := m.Client(env.Primary)
	makePVC(t, p, vm+"-root", "standard", corev1.PersistentVolumeBlock)
	makePVC(t, p, vm+"-data", "standard", corev1.PersistentVolumeBlock)
	makeVM(t, p, vm, dvVolume("rootdisk", vm+"-root"), pvcVolume("datadisk", vm+"-data"), cloudInitVolume())
	env.Eventually(t, wait, vm+" running", vmRunning(t, p, vm))
	if c.step.unprotect() {
		return m.runUnprotect(t, c, vm)
	}
	return m.runProtect(t, c, vm)
}

func (m *matrix) runProtect(t *testing.T, c cell, vm string) cellResult {
	q, name := m.Client(env.Quorum), "protect-"+vm
	res := cellResult{cell: c}
	if c.step.phase == srv1alpha1.ProtectionWaitingForInitialSync {
		// 1 KiB/s keeps the sync under way for the fault to land in it.
		require.NoError(t, m.fabric.SetSyncRate(1))
	}
	require.NoError(t, q.Create(t.Context(), newRequest(name, vm)))
	env.Eventually(t, wait, name+" entering "+string(c.step.phase), func() error {
		r := &srv1alpha1.ProtectionRequest{}
		if err := q.Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: name}, r); err != nil {
			return err
		}
		if phaseIndex(r.Status.Phase) < phaseIndex(c.step.phase) {
			return fmt.Errorf("phase %q", r.Status.Phase)
		}
		res.landed = string(r.Status.Phase)
		return nil
	})
	healed := m.withFault(t, c, func() {
		res.held = m.holdWatching(t, c, name)
		require.NoError(t, m.fabric.SetSyncRate(1<<30))
	})
	env.Eventually(t, matrixRecovery, name+" Protected after the heal", phaseIs(t.Context(), q, name, srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	res.recovery = time.Since(healed).Round(100 * time.Millisecond)
	res.outcome = "Protected"
	pc := m.Client(env.Primary)
	env.Eventually(t, wait, vm+" running on its frontends", vmRunning(t, pc, vm))
	assert.Equal(t, map[string]string{"rootdisk": "pvc:" + vm + "-root-drbd", "datadisk": "pvc:" + vm + "-data-drbd"}, claims(getVM(t, pc, vm)))
	return res
}

func (m *matrix) runUnprotect(t *testing.T, c cell, vm string) cellResult {
	q, name := m.Client(env.Quorum), "protect-"+vm
	res := cellResult{cell: c}
	require.NoError(t, q.Create(t.Context(), newRequest(name, vm)))
	env.Eventually(t, wait, name+" Protected", phaseIs(t.Context(), q, name, srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	env.Eventually(t, wait, vm+" standby on DR", func() error {
		return m.Client(env.DR).Get(t.Context(), client.ObjectKey{Namespace: env.AppNS, Name: vm}, &kubevirtv1.VirtualMachine{})
	})
	require.NoError(t, q.Delete(t.Context(), getRequest(t, q, name)))
	switch c.step {
	case stepLeftGroup:
		env.Eventually(t, wait, vm+" leaving group prod-pg", func() error {
			if gone(q, name)() == nil || !slices.Contains(members(t, q, "prod-pg"), vm) {
				return nil
			}
			return fmt.Errorf("%s is still in the group", vm)
		})
	case stepRemoving:
		env.Eventually(t, wait, name+" removing replication", func() error {
			if gone(q, name)() == nil {
				return nil
			}
			return readyIs(q, name, protection.ReasonRemovingReplication, "")()
		})
	}
	res.landed = landedIn(t, q, name)
	healed := m.withFault(t, c, func() { res.held = m.holdWatching(t, c, name) })
	env.Eventually(t, matrixRecovery, name+" removed after the heal", gone(q, name))
	res.recovery = time.Since(healed).Round(100 * time.Millisecond)
	res.outcome = "removed"

	pc := m.Client(env.Primary)
	env.Eventually(t, wait, vm+" running on the primary", vmRunning(t, pc, vm))
	v := getVM(t, pc, vm)
	assert.Equal(t, map[string]string{"rootdisk": "dv:" + vm + "-root", "datadisk": "pvc:" + vm + "-data"}, claims(v), "back on its original volumes")
	assert.NotContains(t, v.Labels, srv1alpha1.ProtectionGroupLabel)
	assert.NotContains(t, v.Annotations, protection.OriginalVolumesAnnotation)
	nothingLeft(t, m.zone, name)
	return res
}

// landedIn is the Ready reason of a request being removed, or "removed" once
// it is gone.
func landedIn(t *testing.T, q client.Client, name string) string {
	r := &srv1alpha1.ProtectionRequest{}
	if err := q.Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: name}, r); err != nil {
		return "removed"
	}
	if ready := meta.FindStatusCondition(r.Status.Conditions, srv1alpha1.ConditionReady); ready != nil {
		return ready.Reason
	}
	return string(r.Status.Phase)
}

// withFault injects the cell's fault, runs hold while it lasts and heals it,
// even when hold fails the cell, so that the next cell finds a whole zone. It
// returns when the fault was healed.
func (m *matrix) withFault(t *testing.T, c cell, hold func()) time.Time {
	cluster := c.fault.Cluster(env.Primary, env.DR)
	c.fault.Inject(t, m.Env, m.procs, cluster)
	healed := false
	defer func() {
		if !healed {
			c.fault.Heal(m.top, m.Env, m.procs, cluster)
			_ = m.fabric.SetSyncRate(1 << 30)
		}
	}()
	hold()
	c.fault.Heal(m.top, m.Env, m.procs, cluster)
	healed = true
	return time.Now()
}

// holdWatching lets the fault last faultHold while reading the request as a
// user would: it is never Failed, and while unfinished it says why (a Ready
// reason). It returns the last reason seen, or how the request ended. A
// stopped quorum API server shows nothing to anyone, so there is nothing to
// read then.
func (m *matrix) holdWatching(t *testing.T, c cell, name string) string {
	q := m.Client(env.Quorum)
	held := ""
	for end := time.Now().Add(faultHold); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		r := &srv1alpha1.ProtectionRequest{}
		err := q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, r)
		cancel()
		switch {
		case err != nil && c.step.unprotect() && gone(q, name)() == nil:
			return "removed before the fault took hold"
		case err != nil:
			continue
		}
		ready := meta.FindStatusCondition(r.Status.Conditions, srv1alpha1.ConditionReady)
		require.NotEqual(t, srv1alpha1.ProtectionFailed, r.Status.Phase, "cell %s: %s failed while the fault lasted: %+v", c, name, ready)
		require.NotNil(t, ready, "cell %s: %s has no Ready condition in %s", c, name, r.Status.Phase)
		require.NotEmpty(t, ready.Reason, "cell %s: %s", c, name)
		if !c.step.unprotect() && r.Status.Phase == srv1alpha1.ProtectionProtected {
			if held == "" {
				return "Protected while the fault lasted"
			}
			return held + " → Protected while the fault lasted"
		}
		held = ready.Reason
		if ready.Message != "" {
			held += ": " + ready.Message
		}
	}
	if held == "" {
		return "(unreadable)"
	}
	return held
}

// matrixTable renders the results as a Markdown table.
func matrixTable(results []cellResult) string {
	var b strings.Builder
	b.WriteString("| flow | fault | step | landed in | while it lasted, the request said | outcome | recovery after heal |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		held := r.held
		if len(held) > 140 {
			held = held[:140] + "…"
		}
		flow := "protect"
		if r.cell.step.unprotect() {
			flow = "unprotect"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", flow, r.cell.fault.Name, r.cell.step.name, r.landed,
			strings.ReplaceAll(held, "|", "/"), r.outcome, r.recovery)
	}
	return b.String()
}
