package sim

import (
	"fmt"
)

// object is one events2 object: its identity ("peer-device name:r ...")
// and the state fields printed after it.
type object struct {
	key, fields string
}

// objectsSince lists what `events2 --statistics` would report for node host,
// in drbd-utils order, for a stream that rendered them at version since, each
// resource's into cache (nil: none yet). It renders again only the resources
// changed after since, as DRBD's own stream reports only what changed:
// rendering every resource of the node after each change of any made a
// failover of N replicas cost N² renderings, which benchmarks charged to the
// product. A world that may have changed anywhere since renders whole. It
// returns the new cache.
func (w *World) objectsSince(host, only string, since uint64, cache map[string][]object) ([]object, map[string][]object) {
	if w.allChangedAt > since {
		cache = nil
	}
	names := w.namesOn(host)
	next := make(map[string][]object, len(names))
	var out []object
	for _, name := range names {
		objs, ok := cache[name]
		if !ok || w.changedAt[name] > since {
			objs = w.resourceObjects(host, only, name)
		}
		next[name] = objs
		out = append(out, objs...)
	}
	return out, next
}

// resourceObjects is what events2 reports of one resource: the resource, its
// devices, then per connection the connection, its path and its peer devices.
func (w *World) resourceObjects(host, only, name string) []object {
	r := w.Resources[name]
	if r == nil {
		return nil
	}
	n := r.Nodes[host]
	if n == nil || !n.Up || (only != "" && only != "all" && only != name) {
		return nil
	}
	var out []object
	mayPromote, score := r.Promotion(n)
	out = append(out, object{"resource name:" + name, fmt.Sprintf(
		"role:%s suspended:%s force-io-failures:no write-ordering:flush may_promote:%s promotion_score:%d",
		n.Role, r.Suspended(n), yesNo(mayPromote), score)})
	quorum := yesNo(r.HasQuorum(n))
	for _, v := range sortedVols(r) {
		vol := r.Volumes[v]
		out = append(out, object{fmt.Sprintf("device name:%s volume:%d minor:%d", name, v, vol.Minor), fmt.Sprintf(
			"backing_dev:%s disk:%s client:no open:%s quorum:%s size:%d read:%d written:%d al-writes:0 bm-writes:0 upper-pending:0 lower-pending:0 al-suspended:no blocked:no",
			vol.Disk, r.DiskView(n, v), yesNo(r.deviceOpen(n, v)), quorum, r.sizeKiB(n, v, w.SizeKiB), n.Read[v], n.Written[v])})
	}
	for _, c := range r.Conns(n, w.SizeKiB) {
		id := fmt.Sprintf("name:%s peer-node-id:%d conn-name:%s", name, c.Peer.NodeID, c.Peer.Host)
		out = append(out,
			object{"connection " + id, fmt.Sprintf(
				"connection:%s role:%s congested:%s ap-in-flight:%d rs-in-flight:0", c.State, c.PeerRole, yesNo(c.Congested), c.APInFlight)},
			object{fmt.Sprintf("path %s local:%s peer:%s", id, n.Addr, c.Peer.Addr),
				"established:" + yesNo(c.Connected)})
		for _, pv := range c.Peers {
			done := ""
			if pv.Syncing {
				done = " done:" + fmtPct(pv.Done)
			}
			// Without --verbose, drbdsetup prints out-of-sync only when it is
			// not zero, and neither pending nor unacked
			// (print_peer_device_statistics in LINBIT/drbd-utils,
			// user/v9/drbdsetup.c).
			oos := ""
			if pv.OOS != 0 {
				oos = fmt.Sprintf(" out-of-sync:%d", pv.OOS)
			}
			out = append(out, object{fmt.Sprintf("peer-device %s volume:%d", id, pv.Volume), fmt.Sprintf(
				"replication:%s peer-disk:%s peer-client:no resync-suspended:no%s received:%d sent:%d%s",
				pv.Replication, pv.PeerDisk, done, pv.Recv, pv.Sent, oos)})
		}
	}
	return out
}

// diff returns the events2 lines turning prev into cur: creates and
// changes in cur's order, destroys in reverse order of prev (children
// before parents, as drbd does).
func diff(prev, cur []object) []string {
	old := make(map[string]string, len(prev))
	for _, o := range prev {
		old[o.key] = o.fields
	}
	now := make(map[string]bool, len(cur))
	var lines []string
	for _, o := range cur {
		now[o.key] = true
		f, ok := old[o.key]
		switch {
		case !ok:
			lines = append(lines, "create "+o.key+" "+o.fields)
		case f != o.fields:
			lines = append(lines, "change "+o.key+" "+o.fields)
		}
	}
	for i := len(prev) - 1; i >= 0; i-- {
		if !now[prev[i].key] {
			lines = append(lines, "destroy "+prev[i].key)
		}
	}
	return lines
}
