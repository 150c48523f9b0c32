package guest_test

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/siterecovery/siterecovery/test/sim/guest"
)

var errNotHeld = errors.New("not held")

// openers records which holder has which device open, as DRBD's open count.
type openers struct{ held map[string]string }

func (o *openers) OpenDevice(node string, minor int, holder string) error {
	o.held[fmt.Sprintf("%s/drbd%d", node, minor)] = holder
	return nil
}

func (o *openers) CloseDevice(node string, minor int, holder string) error {
	k := fmt.Sprintf("%s/drbd%d", node, minor)
	if o.held[k] != holder {
		return fmt.Errorf("%s does not hold %s: %w", holder, k, errNotHeld)
	}
	delete(o.held, k)
	return nil
}

// TestHolderOpensTheVMIsDRBDDevices: a VMI's claims resolve to the DRBD
// devices on the node their PVs name, which its qemu opens and closes; a
// second close is no error, a raw volume is not tracked.
func TestHolderOpensTheVMIsDRBDDevices(t *testing.T) {
	running := vmi(kubevirtv1.Running, true)
	running.UID = "uid-1"
	c := drbdCluster("dr", &fakeDRBD{}, running)
	o := &openers{held: map[string]string{}}
	h := guest.NewHolder(c, o, errNotHeld)

	require.NoError(t, h.Open(t.Context(), running))
	var devs []string
	for k, holder := range o.held {
		devs = append(devs, k)
		require.Contains(t, holder, "db uid-1", "the holder names the VMI")
	}
	sort.Strings(devs)
	require.Equal(t, []string{"dr-1/drbd1000", "dr-1/drbd1001"}, devs)

	require.NoError(t, h.Close(t.Context(), running))
	require.Empty(t, o.held)
	require.NoError(t, h.Close(t.Context(), running), "closing again is no error")

	raw := newRawCluster(t, "primary", kubevirtv1.Running)
	require.NoError(t, guest.NewHolder(raw.Cluster, o, errNotHeld).Open(t.Context(), running))
	require.Empty(t, o.held, "raw volumes are not DRBD devices")
}
