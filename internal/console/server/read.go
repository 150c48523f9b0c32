package server

import (
	"context"
	"sort"

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
// user may not list is recorded as hidden rather than failing the page.
func (s *Server) read(ctx context.Context, cl client.Client) (*snapshot, error) {
	sc, zones, err := s.scopeOf(ctx, cl)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{zones: zones, hidden: map[string][]string{}}
	for _, opts := range sc.listOptions() {
		ns := "*"
		if !sc.all {
			ns = string(opts[0].(client.InNamespace))
		}
		var g srv1alpha1.ProtectionGroupList
		var rgs srv1alpha1.ReplicationGroupStatusList
		var rpo srv1alpha1.RPOEventList
		var fr srv1alpha1.FailoverRequestList
		var tf srv1alpha1.TestFailoverList
		var pr srv1alpha1.ProtectionRequestList
		for _, l := range []struct {
			what string
			list client.ObjectList
			add  func()
		}{
			{"protection groups", &g, func() { snap.groups = append(snap.groups, g.Items...) }},
			{"replication statuses", &rgs, func() { snap.statuses = append(snap.statuses, rgs.Items...) }},
			{"RPO events", &rpo, func() { snap.rpo = append(snap.rpo, rpo.Items...) }},
			{"failover requests", &fr, func() { snap.failover = append(snap.failover, fr.Items...) }},
			{"test failovers", &tf, func() { snap.tests = append(snap.tests, tf.Items...) }},
			{"protection requests", &pr, func() { snap.protects = append(snap.protects, pr.Items...) }},
		} {
			err := cl.List(ctx, l.list, opts...)
			switch {
			case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
				snap.hidden[ns] = append(snap.hidden[ns], "you may not list "+l.what)
			case err != nil:
				return nil, err
			default:
				l.add()
			}
		}
	}
	return snap, nil
}
