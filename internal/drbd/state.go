package drbd

import (
	"reflect"
	"sort"
	"strings"
	"sync"
)

// Tracker folds events2 events into per-resource state. It is safe for
// concurrent use.
//
// Resync after an events2 restart: every (re)started `events2 --full`
// begins with a dump of `exists` lines ending in `exists -`. The first
// `exists` line after a marker, after a live (non-exists) event or on a
// fresh Tracker opens a new dump; inside a dump each resource is rebuilt
// from scratch, and at the marker resources that were not listed are
// dropped. So the state after the marker equals what drbd reported,
// whatever was missed while no events2 process was running.
type Tracker struct {
	mu        sync.Mutex
	resources map[string]*ResourceStatus
	inDump    bool
	seen      map[string]bool
	// stash keeps the pre-dump state of rebuilt resources so counter
	// deltas continue across an events2 restart.
	stash map[string]*ResourceStatus
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{resources: map[string]*ResourceStatus{}}
}

// Apply folds one event into the state. It returns the affected resource
// and whether its state changed. For the end-of-dump marker the name is
// "" and changed says whether stale resources were dropped; callers that
// care should take a fresh Snapshot then.
func (t *Tracker) Apply(ev Event) (resourceName string, changed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()

	if ev.IsInitialDone() {
		return "", t.endDump()
	}
	if ev.Kind == KindExists {
		if !t.inDump {
			t.inDump, t.seen = true, map[string]bool{}
			t.stash = map[string]*ResourceStatus{}
		}
		if ev.Object == ObjectResource && !t.seen[ev.Resource] {
			t.seen[ev.Resource] = true
			if old := t.resources[ev.Resource]; old != nil {
				t.stash[ev.Resource] = old
			}
			t.resources[ev.Resource] = newResourceStatus(ev.Resource)
		}
	} else {
		t.inDump = false
	}

	name := ev.Resource
	if ev.Kind == KindRename {
		return t.rename(ev)
	}
	old, had := t.resources[name]
	var before ResourceStatus
	if had {
		before = old.Clone()
	}
	switch ev.Object {
	case ObjectResource:
		if ev.Kind == KindDestroy {
			delete(t.resources, name)
			return name, had
		}
		applyResource(t.get(name), &ev)
	case ObjectDevice:
		applyDevice(t.get(name), &ev)
	case ObjectConnection:
		applyConnection(t.get(name), &ev)
	case ObjectPeerDevice:
		applyPeerDevice(t.get(name), &ev, t.stash[name])
	default: // path, helper: nothing we model
		return name, false
	}
	after := t.resources[name]
	return name, !had || !reflect.DeepEqual(before, *after)
}

func (t *Tracker) get(name string) *ResourceStatus {
	r := t.resources[name]
	if r == nil {
		r = newResourceStatus(name)
		t.resources[name] = r
	}
	return r
}

func (t *Tracker) endDump() bool {
	if !t.inDump {
		// A marker without a dump (e.g. no resources at all): everything
		// we know is stale.
		t.seen = map[string]bool{}
	}
	t.inDump = false
	changed := false
	for name := range t.resources {
		if !t.seen[name] {
			delete(t.resources, name)
			changed = true
		}
	}
	t.seen, t.stash = nil, nil
	return changed
}

func (t *Tracker) rename(ev Event) (string, bool) {
	r := t.resources[ev.Resource]
	if r == nil || ev.NewName == "" {
		return ev.Resource, false
	}
	delete(t.resources, ev.Resource)
	r.Name = ev.NewName
	t.resources[ev.NewName] = r
	return ev.NewName, true
}

// Get returns a deep copy of one resource's state.
func (t *Tracker) Get(name string) (ResourceStatus, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.resources[name]
	if !ok {
		return ResourceStatus{}, false
	}
	return r.Clone(), true
}

// Matching returns the names, sorted, of the resources match holds for,
// without copying them: it runs on every DRBD event (the node's taint), and a
// deep copy of every resource per event cost a node of N resources N² copies
// in a failover. match reads the tracker's state under its lock and must
// neither keep nor change it.
func (t *Tracker) Matching(match func(*ResourceStatus) bool) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for name, r := range t.resources {
		if match(r) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Snapshot returns deep copies of all resources, sorted by name.
func (t *Tracker) Snapshot() []ResourceStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ResourceStatus, 0, len(t.resources))
	for _, r := range t.resources {
		out = append(out, r.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func applyResource(r *ResourceStatus, ev *Event) {
	if ev.Has(FieldRole) {
		r.Role = ev.Role
	}
	if ev.Has(FieldSuspended) {
		r.SuspendedReason = ev.Suspended
		r.Suspended = ev.Suspended != "no" && ev.Suspended != ""
	}
	if ev.Has(FieldMayPromote) {
		r.MayPromote, r.MayPromoteKnown = ev.MayPromote, true
	}
	if ev.Has(FieldPromotionScore) {
		r.PromotionScore = ev.PromotionScore
	}
}

func applyDevice(r *ResourceStatus, ev *Event) {
	if ev.Volume < 0 {
		return
	}
	if ev.Kind == KindDestroy {
		delete(r.Devices, ev.Volume)
		return
	}
	d := r.Devices[ev.Volume]
	d.Volume = ev.Volume
	if ev.Has(FieldMinor) {
		d.Minor = ev.Minor
	}
	if ev.Has(FieldDisk) {
		d.DiskState = ev.Disk
	}
	if ev.Has(FieldQuorum) {
		d.Quorum, d.QuorumKnown = ev.Quorum, true
	}
	if ev.Has(FieldSize) {
		d.SizeKiB = ev.Size
	}
	if ev.Has(FieldRead) {
		d.ReadKiB = ev.Read
	}
	if ev.Has(FieldWritten) {
		d.WrittenKiB = ev.Written
	}
	r.Devices[ev.Volume] = d
}

func applyConnection(r *ResourceStatus, ev *Event) {
	if ev.PeerNodeID < 0 {
		return
	}
	if ev.Kind == KindDestroy {
		delete(r.Connections, ev.PeerNodeID)
		return
	}
	c := connOf(r, ev)
	if ev.Has(FieldConnection) {
		c.ConnectionState = ev.Connection
	}
	if ev.Has(FieldPeerRole) {
		c.PeerRole = ev.PeerRole
	}
	if ev.Has(FieldCongested) {
		c.Congested = ev.Congested
	}
	if ev.Has(FieldAPInFlight) {
		c.APInFlightSectors = ev.APInFlight
	}
	r.Connections[ev.PeerNodeID] = c
}

func connOf(r *ResourceStatus, ev *Event) ConnectionStatus {
	c, ok := r.Connections[ev.PeerNodeID]
	if !ok {
		c = ConnectionStatus{PeerNodeID: ev.PeerNodeID, PeerDevices: map[int]PeerDeviceStatus{}}
	}
	if ev.ConnName != "" {
		c.Name = ev.ConnName
	}
	return c
}

func applyPeerDevice(r *ResourceStatus, ev *Event, base *ResourceStatus) {
	if ev.PeerNodeID < 0 || ev.Volume < 0 {
		return
	}
	c := connOf(r, ev)
	if ev.Kind == KindDestroy {
		delete(c.PeerDevices, ev.Volume)
		r.Connections[ev.PeerNodeID] = c
		return
	}
	pd, known := c.PeerDevices[ev.Volume]
	if !known && base != nil {
		if old, ok := base.Connections[ev.PeerNodeID].PeerDevices[ev.Volume]; ok {
			pd.ReceivedKiB, pd.SentKiB, known = old.ReceivedKiB, old.SentKiB, true
		}
	}
	pd.Volume = ev.Volume
	if ev.Has(FieldReplication) {
		pd.ReplicationState = ev.Replication
	}
	if ev.Has(FieldPeerDisk) {
		pd.PeerDiskState = ev.PeerDisk
	}
	if ev.Has(FieldOutOfSync) {
		pd.OutOfSyncBytes = kibToBytes(ev.OutOfSync)
	} else if ev.Has(FieldReceived) && !ev.Has(FieldDone) {
		// events2 omits out-of-sync:0 unless verbose; a statistics line
		// without it means nothing is out of sync.
		pd.OutOfSyncBytes = 0
	}
	// Without a baseline the first sample has no meaningful delta.
	if ev.Has(FieldReceived) {
		if known {
			pd.ReceivedDeltaKiB = CounterDelta(pd.ReceivedKiB, ev.Received)
		}
		pd.ReceivedKiB = ev.Received
	}
	if ev.Has(FieldSent) {
		if known {
			pd.SentDeltaKiB = CounterDelta(pd.SentKiB, ev.Sent)
		}
		pd.SentKiB = ev.Sent
	}
	if ev.Has(FieldPending) {
		pd.Pending = ev.Pending
	}
	if ev.Has(FieldUnacked) {
		pd.Unacked = ev.Unacked
	}
	pd.PercentInSync = percentInSync(pd, ev, r.Devices[ev.Volume].SizeKiB)
	c.PeerDevices[ev.Volume] = pd
	r.Connections[ev.PeerNodeID] = c
}

// percentInSync prefers drbd's own "done" during a resync, then the
// UpToDate+Established shortcut, then out-of-sync relative to the size.
func percentInSync(pd PeerDeviceStatus, ev *Event, sizeKiB uint64) float64 {
	if ev.Has(FieldDone) && isResyncState(pd.ReplicationState) {
		return ev.Done
	}
	if pd.PeerDiskState == "UpToDate" && pd.ReplicationState == "Established" && pd.OutOfSyncBytes == 0 {
		return 100
	}
	if sizeKiB > 0 {
		oos := float64(pd.OutOfSyncBytes) / 1024
		p := 100 * (1 - oos/float64(sizeKiB))
		return max(0, min(100, p))
	}
	if isResyncState(pd.ReplicationState) {
		return pd.PercentInSync // keep the last known value
	}
	return 0
}

func isResyncState(s string) bool {
	return strings.HasPrefix(s, "Sync") || strings.HasPrefix(s, "PausedSync")
}
