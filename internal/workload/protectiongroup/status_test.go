package protectiongroup

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// A status write that moves only VMs, replicas and messages is progress; one
// that moves the state, a generation, a condition's status or the role every
// replica shares is not.
func TestProgressOnly(t *testing.T) {
	base := func() *srv1alpha1.ProtectionGroupStatus {
		return &srv1alpha1.ProtectionGroupStatus{
			ObservedGeneration: 3,
			CurrentState:       srv1alpha1.StateStopping,
			VirtualMachines:    []srv1alpha1.VMStatus{{Name: "a", PrintableStatus: "Running"}, {Name: "b", PrintableStatus: "Running"}},
			DRBD: &srv1alpha1.GroupDRBDStatus{AppliedGeneration: 3, Replicas: []srv1alpha1.ReplicaRoleStatus{
				{Name: "a", Role: "Primary"}, {Name: "b", Role: "Primary"}}},
			Conditions: []metav1.Condition{{Type: srv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: srv1alpha1.ReasonProgressing, Message: "0/2 VMs stopped"}},
		}
	}
	for _, c := range []struct {
		name     string
		change   func(*srv1alpha1.ProtectionGroupStatus)
		progress bool
	}{
		{"a VM moves", func(s *srv1alpha1.ProtectionGroupStatus) {
			s.VirtualMachines[0].PrintableStatus = "Stopped"
			s.Conditions[0].Message = "1/2 VMs stopped"
		}, true},
		{"a replica moves", func(s *srv1alpha1.ProtectionGroupStatus) { s.DRBD.Replicas[0].Role = "Secondary" }, true},
		{"every replica shares a new role", func(s *srv1alpha1.ProtectionGroupStatus) {
			s.DRBD.Replicas[0].Role, s.DRBD.Replicas[1].Role = "Secondary", "Secondary"
		}, false},
		{"the state", func(s *srv1alpha1.ProtectionGroupStatus) { s.CurrentState = srv1alpha1.StateStopped }, false},
		{"the observed generation", func(s *srv1alpha1.ProtectionGroupStatus) { s.ObservedGeneration = 4 }, false},
		{"the applied generation", func(s *srv1alpha1.ProtectionGroupStatus) { s.DRBD.AppliedGeneration = 4 }, false},
		{"tainted nodes", func(s *srv1alpha1.ProtectionGroupStatus) { s.DRBD.TaintedNodes = []string{"n"} }, false},
		{"a condition's status", func(s *srv1alpha1.ProtectionGroupStatus) {
			s.Conditions[0].Status, s.Conditions[0].Reason = metav1.ConditionTrue, srv1alpha1.ReasonReconciled
		}, false},
	} {
		after := base()
		c.change(after)
		require.Equal(t, c.progress, progressOnly(base(), after), c.name)
	}
}
