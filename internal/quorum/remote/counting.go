package remote

import (
	"reflect"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// count makes the connection's metrics follow one kind's informer: every
// event it receives from the API server, and the objects it holds. It is
// added once per kind and connection, however many controllers watch the
// kind, so the figures are the cache's, not the sum of its listeners. A
// replaced connection's informer may deliver a last event after its
// successor started counting; it is not counted.
func (c *connection) count(inf cache.Informer, obj client.Object) error {
	kind := kindName(obj)
	c.metrics.objects.WithLabelValues(c.key.Zone, c.key.Cluster, kind).Set(0)
	events := c.metrics.events.WithLabelValues(c.key.Zone, c.key.Cluster, kind)
	objects := c.metrics.objects.WithLabelValues(c.key.Zone, c.key.Cluster, kind)
	live := func() bool { return c.ctx.Err() == nil }
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			if live() {
				events.Inc()
				objects.Inc()
			}
		},
		UpdateFunc: func(_, _ any) {
			if live() {
				events.Inc()
			}
		},
		DeleteFunc: func(any) {
			if live() {
				events.Inc()
				objects.Dec()
			}
		},
	})
	return err
}

// kindName is the kind of obj as a metric label: its Go type's name, which is
// the Kubernetes kind for every type of the scheme.
func kindName(obj client.Object) string {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
