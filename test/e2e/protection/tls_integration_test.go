package protection_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/protection"
	"github.com/siterecovery/siterecovery/test/env"
)

// TestReplicationTLS, in one zone: with the zone's spec.drbd.tls Required, a
// VM's replicas carry it; while the DR node runs Debian's drbd-utils 9.22
// (no TLS) that replica is held, never rendered nor connected, and the
// request says which node, what it found and what to install; once the node
// has drbd-utils 9.26 and module 9.2.6 the replicas connect with "tls yes"
// in both files and the VM is Protected. With TLS Disabled again, the next
// VM's replicas carry no tls and their files no TLS option.
func TestReplicationTLS(t *testing.T) {
	z := newZone(t)
	ctx := t.Context()
	q, p, d := z.Client(env.Quorum), z.Client(env.Primary), z.Client(env.DR)
	z.drbdVersions = map[string][2]string{env.Primary: {"9.28.0", "9.2.8"}} // the DR node keeps the defaults: 9.22.0
	z.agents[env.Primary].Stop(t)
	z.startAgent(t, env.Primary)
	setZoneTLS(t, q, srv1alpha1.ReplicationTLSRequired)

	askProtection(t, q, p, "vm1")
	drNode := env.Nodes[env.DR].Name
	env.Eventually(t, wait, "protect-vm1 held for TLS", func() error {
		c := meta.FindStatusCondition(getRequest(t, q, "protect-vm1").Status.Conditions, protection.ConditionInitialSyncComplete)
		if c == nil || c.Reason != srv1alpha1.ReasonReplicationTLSUnsupported {
			return fmt.Errorf("InitialSyncComplete: %+v", c)
		}
		for _, want := range []string{"node " + drNode, "drbd-utils 9.22.0 (need >= 9.26.0)", "Install DRBD kernel module >= 9.2.6 and drbd-utils >= 9.26.0", "tlshd", "never in plain text"} {
			if !strings.Contains(c.Message, want) {
				return fmt.Errorf("message %q lacks %q", c.Message, want)
			}
		}
		return nil
	})
	name := getRequest(t, q, "protect-vm1").Status.DRBDResourceName
	held := replicaIn(t, d, name)
	assert.True(t, held.Spec.TLS.Required(), "DR replica spec.tls: %+v", held.Spec.TLS)
	assert.True(t, replicaIn(t, p, name).Spec.TLS.Required())
	assert.False(t, meta.IsStatusConditionTrue(held.Status.Conditions, srv1alpha1.ConditionConnected))
	_, err := os.Stat(resFilePath(z, env.DR, name))
	assert.ErrorIs(t, err, os.ErrNotExist, "the held replica's resource file must not exist")

	// The DR node gets DRBD that does TLS: the agent notices at its retry.
	z.drbdVersions[env.DR] = [2]string{"9.26.0", "9.2.6"}
	z.agents[env.DR].Stop(t)
	z.startAgent(t, env.DR)
	env.Eventually(t, wait, "protect-vm1 Protected", phaseIs(ctx, q, "protect-vm1", srv1alpha1.ProtectionProtected, protection.ReasonProtected))
	for _, cluster := range []string{env.Primary, env.DR} {
		assert.Contains(t, readRes(t, z, cluster, name), "        tls yes;\n", cluster)
		// The request is Protected once DRBD connects; the restarted
		// agent's status write of its replica may come a moment later.
		env.Eventually(t, wait, cluster+" replica Connected", func() error {
			if r := replicaIn(t, z.Client(cluster), name); !meta.IsStatusConditionTrue(r.Status.Conditions, srv1alpha1.ConditionConnected) {
				return fmt.Errorf("conditions %+v", r.Status.Conditions)
			}
			return nil
		})
	}

	// Without TLS nothing changes: no field, no option.
	setZoneTLS(t, q, srv1alpha1.ReplicationTLSDisabled)
	plain := protectVM(t, q, p, "vm2").Status.DRBDResourceName
	for _, cluster := range []string{env.Primary, env.DR} {
		assert.Nil(t, replicaIn(t, z.Client(cluster), plain).Spec.TLS, cluster)
		assert.NotContains(t, readRes(t, z, cluster, plain), "tls", cluster)
	}
}

// setZoneTLS sets the zone's replication TLS mode.
func setZoneTLS(t *testing.T, q client.Client, mode srv1alpha1.ReplicationTLSMode) {
	t.Helper()
	zone := &srv1alpha1.ProtectionZone{}
	require.NoError(t, q.Get(t.Context(), client.ObjectKey{Namespace: env.Namespace, Name: env.ZoneName}, zone))
	before := zone.DeepCopy()
	zone.Spec.DRBD = &srv1alpha1.ZoneDRBDSettings{TLS: &srv1alpha1.DRBDReplicationTLS{Mode: mode}}
	require.NoError(t, q.Patch(t.Context(), zone, client.MergeFrom(before)))
}

func resFilePath(z *zone, cluster, name string) string {
	return filepath.Join(z.dir, env.Nodes[cluster].Name, "drbd.d", name+".res")
}

// readRes is the resource file the cluster's agent rendered for name.
func readRes(t *testing.T, z *zone, cluster, name string) string {
	t.Helper()
	data, err := os.ReadFile(resFilePath(z, cluster, name))
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: no resource file for %s", cluster, name)
	}
	require.NoError(t, err)
	return string(data)
}
