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

const (
	// heartbeat keeps proxies from closing an idle stream.
	heartbeat = 20 * time.Second
	// sessionCheck is how often a stream looks at its session: it ends the
	// stream soon after the session ends, and asks the browser for a new
	// stream when the session's token was replaced or is about to expire.
	sessionCheck = 2 * time.Second
)

// events streams changes to the kinds the console shows, from watches made
// with the user's credentials: a user sees changes only to what RBAC lets
// them watch. The page re-reads what it shows when a change arrives.
func (s *Server) events(w http.ResponseWriter, r request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeJSON(w, http.StatusInternalServerError, apiError{Code: http.StatusInternalServerError, Message: "streaming unsupported"})
		return
	}
	release, ok := s.streams.acquire(r.session.ID)
	if !ok {
		w.Header().Set("Retry-After", "30")
		writeJSON(w, http.StatusTooManyRequests, apiError{Code: http.StatusTooManyRequests, Reason: "TooManyStreams",
			Message: fmt.Sprintf("this session already follows live updates in %d tabs, the most it may; close one to follow them here", s.opts.MaxStreamsPerSession)})
		return
	}
	// Released after the watches are stopped, so that a session never has
	// more watches running than its slots allow.
	defer release()
	sc, _, err := s.scopeOf(r.Context(), r.client)
	if err != nil {
		e := toAPIError(err)
		writeJSON(w, e.Code, e)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	out := make(chan change, 64)
	var wg sync.WaitGroup
	// The watches are stopped before they are waited for: waiting first kept
	// a stream the server ended open until the browser left.
	defer func() {
		cancel()
		wg.Wait()
	}()
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

	// A token already due when the stream opened was just refreshed into
	// another short-lived one (or cannot be refreshed): asking for a new
	// stream would only refresh it again, every few seconds. Whether it was due is decided before the stream is
	// answered: decided after, a clock that moved in between (a refresh
	// point passed while the headers were on their way) read as "due at
	// start", and the stream never asked to be renewed.
	dueAtStart := s.refreshDue(r.creds)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 3000\n\n")
	fl.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	check := time.NewTicker(sessionCheck)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-check.C:
			if ev := s.streamEnds(r, dueAtStart); ev != "" {
				// The browser opens its next stream as soon as it reads
				// "renew": this one's watches and slot go first.
				cancel()
				wg.Wait()
				release()
				_, _ = fmt.Fprintf(w, "event: %s\ndata: {}\n\n", ev)
				fl.Flush()
				return
			}
		case <-tick.C:
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

// streamEnds says why a stream must end, as the event the browser gets:
// "ended" when its session is gone, "renew" when the watches' token was
// replaced or is due for a refresh. On "renew" the browser opens a new
// stream at once; its request refreshes the token, and its watches run
// with the new one. Empty when the stream goes on.
func (s *Server) streamEnds(r request, dueAtStart bool) string {
	if !s.sessions.Alive(r.session.ID) {
		return "ended"
	}
	c := r.session.Credentials()
	if c.Token != r.creds.Token || (!dueAtStart && s.refreshDue(c)) {
		return "renew"
	}
	return ""
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
