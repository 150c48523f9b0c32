package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// change is one server-sent event: an object the page may show changed.
type change struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Type      string `json:"type"`
}

// heartbeat keeps proxies from closing an idle stream and lets the server
// notice a session that ended.
const heartbeat = 20 * time.Second

// events streams changes to the kinds the console shows, from watches made
// with the user's credentials: a user sees changes only to what RBAC lets
// them watch. The page re-reads what it shows when a change arrives.
func (s *Server) events(w http.ResponseWriter, r request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, apiError{Code: http.StatusInternalServerError, Message: "streaming unsupported"})
		return
	}
	sc, _, err := s.scopeOf(r.Context(), r.client)
	if err != nil {
		e := toAPIError(err)
		writeJSON(w, e.Code, e)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out := make(chan change, 64)
	var wg sync.WaitGroup
	for _, opts := range sc.listOptions() {
		for _, l := range []client.ObjectList{
			&srv1alpha1.ProtectionZoneList{}, &srv1alpha1.ProtectionGroupList{}, &srv1alpha1.ReplicationGroupStatusList{},
			&srv1alpha1.RPOEventList{}, &srv1alpha1.FailoverRequestList{}, &srv1alpha1.TestFailoverList{},
			&srv1alpha1.ProtectionRequestList{},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.follow(ctx, r.client, l, opts, out)
			}()
		}
	}
	defer wg.Wait()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 3000\n\n")
	fl.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, ok := s.sessions.Get(r.session.ID); !ok {
				_, _ = fmt.Fprint(w, "event: ended\ndata: {}\n\n")
				fl.Flush()
				return
			}
			_, _ = fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		case c := <-out:
			b, _ := json.Marshal(c)
			if _, err := fmt.Fprintf(w, "event: change\ndata: %s\n\n", b); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// follow watches one kind until ctx ends, re-opening the watch when the API
// server closes it. A kind the user may not watch is skipped.
func (s *Server) follow(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts []client.ListOption, out chan<- change) {
	kind := fmt.Sprintf("%T", list)
	if gvk, err := cl.GroupVersionKindFor(list); err == nil {
		kind = gvk.Kind[:len(gvk.Kind)-len("List")]
	}
	rv := ""
	for ctx.Err() == nil {
		// Listing first gives the resourceVersion to watch from, so that a
		// re-opened watch does not replay every object as added.
		if rv == "" {
			l := list.DeepCopyObject().(client.ObjectList)
			if err := cl.List(ctx, l, opts...); err != nil {
				if !wait(ctx, 5*time.Second) {
					return
				}
				continue
			}
			rv = l.GetResourceVersion()
		}
		wopts := append([]client.ListOption{&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}}}, opts...)
		wi, err := cl.Watch(ctx, list.DeepCopyObject().(client.ObjectList), wopts...)
		if err != nil {
			rv = ""
			if !wait(ctx, 5*time.Second) {
				return
			}
			continue
		}
		rv = s.drain(ctx, wi, kind, rv, out)
	}
}

func (s *Server) drain(ctx context.Context, wi watch.Interface, kind, rv string, out chan<- change) string {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv
			}
			if ev.Type == watch.Error {
				return "" // expired: list again
			}
			acc, err := meta.Accessor(ev.Object)
			if err != nil {
				continue
			}
			rv = acc.GetResourceVersion()
			if ev.Type == watch.Bookmark {
				continue
			}
			select {
			case out <- change{Kind: kind, Namespace: acc.GetNamespace(), Name: acc.GetName(), Type: string(ev.Type)}:
			case <-ctx.Done():
				return rv
			}
		}
	}
}

func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
