package v1alpha1

import (
	"slices"
	"testing"
)

func TestVMNamespacesOnceInOrder(t *testing.T) {
	g := &ProtectionGroup{Spec: ProtectionGroupSpec{VirtualMachines: []VirtualMachineReference{
		{Namespace: "web", Name: "a"}, {Namespace: "db", Name: "b"}, {Namespace: "web", Name: "c"}}}}
	if got, want := g.VMNamespaces(), []string{"web", "db"}; !slices.Equal(got, want) {
		t.Fatalf("VMNamespaces() = %v, want %v", got, want)
	}
	if got := (&ProtectionGroup{}).VMNamespaces(); len(got) != 0 {
		t.Fatalf("a group without VMs has namespaces %v", got)
	}
}
