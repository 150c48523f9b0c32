package server

import (
	"context"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// scope is where a user's reads go: every namespace when the user may list
// ProtectionZones cluster-wide, otherwise each configured DR namespace the
// user may list zones in.
type scope struct {
	all        bool
	namespaces []string
}

func (s scope) listOptions() [][]client.ListOption {
	if s.all {
		return [][]client.ListOption{nil}
	}
	out := make([][]client.ListOption, 0, len(s.namespaces))
	for _, ns := range s.namespaces {
		out = append(out, []client.ListOption{client.InNamespace(ns)})
	}
	return out
}

// scopeOf finds the namespaces the user can see, and returns the zones it
// listed on the way.
func (s *Server) scopeOf(ctx context.Context, cl client.Client) (scope, []srv1alpha1.ProtectionZone, error) {
	var zones srv1alpha1.ProtectionZoneList
	err := cl.List(ctx, &zones)
	if err == nil {
		sc := scope{all: true}
		seen := map[string]bool{}
		for _, z := range zones.Items {
			if !seen[z.Namespace] {
				seen[z.Namespace] = true
				sc.namespaces = append(sc.namespaces, z.Namespace)
			}
		}
		sort.Strings(sc.namespaces)
		return sc, zones.Items, nil
	}
	if !apierrors.IsForbidden(err) {
		return scope{}, nil, err
	}
	var sc scope
	var all []srv1alpha1.ProtectionZone
	for _, ns := range s.opts.Namespaces {
		var l srv1alpha1.ProtectionZoneList
		err := cl.List(ctx, &l, client.InNamespace(ns))
		switch {
		case apierrors.IsForbidden(err):
			continue
		case err != nil:
			return scope{}, nil, err
		}
		sc.namespaces = append(sc.namespaces, ns)
		all = append(all, l.Items...)
	}
	return sc, all, nil
}

// read lists every kind the console shows, in the user's scope. A kind the
// user may not list is recorded as hidden rather than failing the page. The
// lists run at once: a page waits for the slowest, not for their sum.
func (s *Server) read(ctx context.Context, cl client.Client) (*snapshot, error) {
	sc, zones, err := s.scopeOf(ctx, cl)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{zones: zones, hidden: map[string][]string{}}
	var reads []*listRead
	for _, opts := range sc.listOptions() {
		ns := "*"
		if !sc.all {
			ns = string(opts[0].(client.InNamespace))
		}
		for _, r := range snap.reads(ns) {
			r.opts = opts
			reads = append(reads, r)
		}
	}
	var wg sync.WaitGroup
	for _, r := range reads {
		wg.Go(func() { r.err = cl.List(ctx, r.list, r.opts...) })
	}
	wg.Wait()
	for _, r := range reads {
		switch {
		case apierrors.IsForbidden(r.err) || apierrors.IsNotFound(r.err):
			snap.hidden[r.ns] = append(snap.hidden[r.ns], "you may not list "+r.what)
		case r.err != nil:
			return nil, r.err
		default:
			r.add()
		}
	}
	return snap, nil
}

// listRead is one list of one kind in one namespace (or all, ns "*").
type listRead struct {
	ns, what string
	list     client.ObjectList
	opts     []client.ListOption
	add      func()
	err      error
}

// reads are the lists of every kind the console shows in ns; add appends a
// list's items to the snapshot.
func (snap *snapshot) reads(ns string) []*listRead {
	var g srv1alpha1.ProtectionGroupList
	var rgs srv1alpha1.ReplicationGroupStatusList
	var rpo srv1alpha1.RPOEventList
	var fr srv1alpha1.FailoverRequestList
	var tf srv1alpha1.TestFailoverList
	var pr srv1alpha1.ProtectionRequestList
	return []*listRead{
		{ns: ns, what: "protection groups", list: &g, add: func() { snap.groups = append(snap.groups, g.Items...) }},
		{ns: ns, what: "replication statuses", list: &rgs, add: func() { snap.statuses = append(snap.statuses, rgs.Items...) }},
		{ns: ns, what: "RPO events", list: &rpo, add: func() { snap.rpo = append(snap.rpo, rpo.Items...) }},
		{ns: ns, what: "failover requests", list: &fr, add: func() { snap.failover = append(snap.failover, fr.Items...) }},
		{ns: ns, what: "test failovers", list: &tf, add: func() { snap.tests = append(snap.tests, tf.Items...) }},
		{ns: ns, what: "protection requests", list: &pr, add: func() { snap.protects = append(snap.protects, pr.Items...) }},
	}
}
