package protectiongroup

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchedVMs remembers, per VM, the generation its last run-state patch gave
// it. A reconcile woken by one VM's event reads the others from a cache that
// may not show their patches yet; patching them again would change nothing
// and cost the API server a request each. Anything else that changes a VM's
// spec raises its generation past the patch's, so a cached VM at the patch's
// generation or later is judged as usual.
type patchedVMs struct {
	mu sync.Mutex
	m  map[types.NamespacedName]patchedVM
}

type patchedVM struct {
	uid        types.UID
	generation int64
}

// sent records the VM as a patch's answer returned it.
func (p *patchedVMs) sent(vm *kubevirtv1.VirtualMachine) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.NamespacedName]patchedVM{}
	}
	p.m[client.ObjectKeyFromObject(vm)] = patchedVM{uid: vm.UID, generation: vm.Generation}
}

// behind reports whether the cached vm is older than the last patch sent to
// it; once it is not, the VM is forgotten.
func (p *patchedVMs) behind(vm *kubevirtv1.VirtualMachine) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := client.ObjectKeyFromObject(vm)
	last, ok := p.m[key]
	if !ok {
		return false
	}
	if last.uid == vm.UID && vm.Generation < last.generation {
		return true
	}
	delete(p.m, key)
	return false
}
