package remote

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type clientObject = client.Object

// metaObject is a kind of its own for the watch tests.
type metaObject struct{ metav1.PartialObjectMetadata }

func newMeta(name string) *metaObject {
	o := &metaObject{}
	o.Name, o.Namespace = name, "apps"
	return o
}
