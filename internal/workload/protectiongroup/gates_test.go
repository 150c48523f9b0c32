package protectiongroup

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

// liveInstances names only the group's VMs, as the API server lists them,
// whatever the cache shows.
func TestLiveInstancesNamesTheGroupsVMIs(t *testing.T) {
	vmi := func(ns, name string) *kubevirtv1.VirtualMachineInstance {
		return &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	api := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithObjects(vmi("apps", "b"), vmi("apps", "other"), vmi("db", "a"), vmi("db", "c")).Build()
	r := &Reconciler{APIReader: api}
	s := &scope{group: &srv1alpha1.ProtectionGroup{Spec: srv1alpha1.ProtectionGroupSpec{VirtualMachines: []srv1alpha1.VirtualMachineReference{
		{Namespace: "db", Name: "a"}, {Namespace: "apps", Name: "b"}, {Namespace: "apps", Name: "stopped"},
	}}}}
	got, err := r.liveInstances(context.Background(), s)
	require.NoError(t, err)
	require.Equal(t, []string{"apps/b", "db/a"}, got)

	got, err = (&Reconciler{}).liveInstances(context.Background(), s)
	require.NoError(t, err)
	require.Empty(t, got, "without an API reader the cache alone decides")
}

// A demotion is one that takes a replica asked Primary to Secondary; the
// start gate waits for the intent and every replica to be Primary.
func TestDemotesAndStartHold(t *testing.T) {
	pri, sec := srv1alpha1.RolePrimary, srv1alpha1.RoleSecondary
	res := func(name string, spec srv1alpha1.DRBDRole, status string) srv1alpha1.DRBDResource {
		return srv1alpha1.DRBDResource{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name},
			Spec: srv1alpha1.DRBDResourceSpec{Role: spec}, Status: srv1alpha1.DRBDResourceStatus{Role: status}}
	}
	require.True(t, Demotes(&srv1alpha1.GroupDRBDIntent{Role: sec}, []srv1alpha1.DRBDResource{res("a", sec, "Secondary"), res("b", pri, "Primary")}))
	require.False(t, Demotes(&srv1alpha1.GroupDRBDIntent{Role: sec}, []srv1alpha1.DRBDResource{res("a", sec, "Primary")}),
		"a replica already asked Secondary is not demoted again by the intent")
	require.False(t, Demotes(&srv1alpha1.GroupDRBDIntent{Role: pri}, []srv1alpha1.DRBDResource{res("a", pri, "Primary")}))

	group := func(in *srv1alpha1.GroupDRBDIntent, replicas ...srv1alpha1.DRBDResource) *scope {
		return &scope{group: &srv1alpha1.ProtectionGroup{Spec: srv1alpha1.ProtectionGroupSpec{DRBD: in}}, replicas: replicas}
	}
	require.Empty(t, startHold(group(nil, res("a", sec, "Secondary"))), "a group not on DRBD never waits")
	require.Empty(t, startHold(group(&srv1alpha1.GroupDRBDIntent{Role: pri}, res("a", pri, "Primary"))))
	require.Equal(t, "holding VM starts: spec.drbd asks role Secondary of this cluster's replicas, and a VM starts only where DRBD is Primary",
		startHold(group(&srv1alpha1.GroupDRBDIntent{Role: sec}, res("a", sec, "Primary"))))
	require.Equal(t, "holding VM starts until every DRBD replica is Primary (1 of 3 are): waiting for apps/b, apps/c",
		startHold(group(&srv1alpha1.GroupDRBDIntent{Role: pri}, res("a", pri, "Primary"), res("b", pri, "Secondary"), res("c", pri, ""))))
}

func TestDemotionHoldCapsLongLists(t *testing.T) {
	var many []string
	for i := range 12 {
		many = append(many, fmt.Sprintf("apps/vm-%02d", i))
	}
	require.Equal(t, "holding DRBD Secondary until every VM has stopped: apps/vm-00, apps/vm-01, apps/vm-02, apps/vm-03, apps/vm-04, apps/vm-05, apps/vm-06, apps/vm-07, apps/vm-08, apps/vm-09 and 2 more still have a VirtualMachineInstance", demotionHold(many))
	require.Equal(t, "holding DRBD Secondary until every VM has stopped: apps/a still has a VirtualMachineInstance", demotionHold([]string{"apps/a"}))
	require.Equal(t, "holding DRBD Secondary until every VM has stopped: apps/a, apps/b still have a VirtualMachineInstance", demotionHold([]string{"apps/a", "apps/b"}))
}
