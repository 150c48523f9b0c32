package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// schemeBuilder collects the kinds that each types file registers in its init,
// so that AddToScheme adds them all under GroupVersion. It stands in for
// controller-runtime's deprecated scheme.Builder: an API package depends on
// apimachinery only.
// +kubebuilder:object:generate=false
type schemeBuilder struct{ runtime.SchemeBuilder }

// Register adds kinds to GroupVersion when the scheme is built.
func (b *schemeBuilder) Register(objects ...runtime.Object) {
	b.SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objects...)
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
}
