package drbd

// Refresh folds a reading of DRBD's current figures (`drbdsetup status
// --json`, parsed with StatusFromJSON) into the tracked state of the same
// resource: the statistics events2 leaves stale, because the kernel
// broadcasts them only with a state change or a resync's progress. The
// states themselves stay as events2 reported them, so a refresh never
// reorders the stream. It reports whether the resource is tracked.
func (t *Tracker) Refresh(read ResourceStatus) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.resources[read.Name]
	if r == nil {
		return false
	}
	for v, d := range read.Devices {
		if cur, ok := r.Devices[v]; ok {
			cur.SizeKiB, cur.ReadKiB, cur.WrittenKiB = d.SizeKiB, d.ReadKiB, d.WrittenKiB
			r.Devices[v] = cur
		}
	}
	for id, c := range read.Connections {
		cur, ok := r.Connections[id]
		if !ok {
			continue
		}
		cur.APInFlightSectors = c.APInFlightSectors
		for v, pd := range c.PeerDevices {
			old, ok := cur.PeerDevices[v]
			if !ok {
				continue
			}
			old.OutOfSyncBytes, old.Pending, old.Unacked = pd.OutOfSyncBytes, pd.Pending, pd.Unacked
			old.ReceivedDeltaKiB = CounterDelta(old.ReceivedKiB, pd.ReceivedKiB)
			old.SentDeltaKiB = CounterDelta(old.SentKiB, pd.SentKiB)
			old.ReceivedKiB, old.SentKiB = pd.ReceivedKiB, pd.SentKiB
			if old.ReplicationState == pd.ReplicationState {
				old.PercentInSync = pd.PercentInSync
			}
			cur.PeerDevices[v] = old
		}
		r.Connections[id] = cur
	}
	return true
}
