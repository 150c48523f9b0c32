package kubevirt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestShouldRun(t *testing.T) {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	starting := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{TransitionAnnotation: transitionStarting}}}
	onceDone := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{OnceStartedAnnotation: "true"}}}
	plain := &kubevirtv1.VirtualMachine{}
	for _, tc := range []struct {
		name     string
		vm       *kubevirtv1.VirtualMachine
		strategy kubevirtv1.VirtualMachineRunStrategy
		vmi      *kubevirtv1.VirtualMachineInstance
		want     bool
	}{
		{"Always", plain, kubevirtv1.RunStrategyAlways, nil, true},
		{"RerunOnFailure", plain, kubevirtv1.RunStrategyRerunOnFailure, nil, true},
		{"Halted with VMI", plain, kubevirtv1.RunStrategyHalted, vmi, false},
		{"WaitAsReceiver", plain, kubevirtv1.RunStrategyWaitAsReceiver, nil, false},
		{"Manual stopped", plain, kubevirtv1.RunStrategyManual, nil, false},
		{"Manual running", plain, kubevirtv1.RunStrategyManual, vmi, true},
		{"Manual starting", starting, kubevirtv1.RunStrategyManual, nil, true},
		{"Once not yet", plain, kubevirtv1.RunStrategyOnce, nil, true},
		{"Once running", onceDone, kubevirtv1.RunStrategyOnce, vmi, true},
		{"Once done", onceDone, kubevirtv1.RunStrategyOnce, nil, false},
	} {
		assert.Equal(t, tc.want, shouldRun(tc.vm, tc.strategy, tc.vmi), tc.name)
	}
}
