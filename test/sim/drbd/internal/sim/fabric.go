package sim

import (
	"errors"
	"fmt"
)

// ErrIO is returned for writes drbd would fail (no quorum with
// on-no-quorum io-error, or suspended I/O).
var ErrIO = errors.New("I/O error")

// ErrNotHeld is wrapped by CloseDevice's error when the holder does not hold
// the device (never opened it, or its close has already lingered out).
var ErrNotHeld = errors.New("device not held")

func (w *World) lookup(res, node string) (*Res, *Node, error) {
	r := w.Resources[res]
	if r == nil {
		return nil, nil, fmt.Errorf("drbdsim: unknown resource %q", res)
	}
	if node == "" {
		return r, nil, nil
	}
	n := r.Nodes[node]
	if n == nil {
		return nil, nil, fmt.Errorf("drbdsim: resource %q has no node %q", res, node)
	}
	return r, n, nil
}

// Write simulates application writes of kib KiB to volume 0 on node.
func (w *World) Write(res, node string, kib uint64) error {
	r, n, err := w.lookup(res, node)
	if err != nil {
		return err
	}
	if !n.Up || n.Role != "Primary" {
		return fmt.Errorf("drbdsim: %s on %s is not Primary: %w", res, node, ErrIO)
	}
	if !r.HasQuorum(n) {
		return fmt.Errorf("drbdsim: %s on %s has no quorum (%s): %w", res, node, n.OnNoQuorum, ErrIO)
	}
	const v = 0
	if d := n.dev(v); d != nil && d.File {
		// A volume with contents: kib KiB of a pattern through the device,
		// at a rolling offset.
		size := d.Layout.DataSize
		data := make([]byte, min(int64(kib)*1024, size))
		for i := range data {
			data[i] = byte(n.Written[v] + uint64(i)/4096)
		}
		off := int64(n.Written[v]*1024) % max(size-int64(len(data))+1, 1) &^ (bmGranule - 1)
		return w.WriteDevice(n.Host, r.Volumes[v].Minor, off, data)
	}
	if err := r.congested(n, kib); err != nil {
		return err
	}
	if d := n.dev(v); d != nil && d.NewCur {
		r.rotateUUID(n, v)
	}
	n.Written[v] += kib
	for _, m := range r.Peers(n) {
		w.countWrite(r, n, m, v, kib)
	}
	return nil
}

// PowerOff is a power cut of host: every resource there stops at once, as
// if never brought up, without the flush of a graceful down. Its protocol A
// windows are lost (their blocks out of sync, as the activity log marks
// them at the next attach), its openers are gone with the VMs, and when it
// is brought up again it starts Secondary. Its peers see it vanish, not
// depart: it still counts against their quorum.
func (w *World) PowerOff(host string) {
	for _, r := range w.Resources {
		n := r.Nodes[host]
		if n == nil || !n.Up {
			continue
		}
		r.LoseLag()
		n.Up, n.Departed, n.Role = false, false, "Secondary"
		n.StandAlone, n.DiscardMyData = nil, false
		for _, d := range n.Devs {
			if d != nil {
				d.Openers = nil
			}
		}
		w.touch(r.Name)
	}
}

// SetLinksCut cuts or restores the network of every resource, and of those
// created while it is cut.
func (w *World) SetLinksCut(cut bool) {
	w.LinksCut = cut
	for _, r := range w.Resources {
		if cut && !r.Partitioned {
			r.LoseLag()
		}
		r.Partitioned = cut
	}
}

// SetPartitioned cuts or restores the network of a resource.
func (w *World) SetPartitioned(res string, cut bool) error {
	r, _, err := w.lookup(res, "")
	if err != nil {
		return err
	}
	if cut && !r.Partitioned {
		r.LoseLag()
	}
	r.Partitioned = cut
	return nil
}

// Drain delivers the protocol A lag of a resource now.
func (w *World) Drain(res string) error {
	r, _, err := w.lookup(res, "")
	if err != nil {
		return err
	}
	r.DrainLag()
	return nil
}

// MarkUpToDate declares node's data authoritative without a forced
// promotion (like `new-current-uuid --clear-bitmap` on a fresh setup
// where only one side has data): peers resync from it.
func (w *World) MarkUpToDate(res, node string) error {
	r, n, err := w.lookup(res, node)
	if err != nil {
		return err
	}
	for v := range r.Volumes {
		n.Disk[v] = "UpToDate"
		if d := n.dev(v); d != nil && d.Current == uuidJustCreated {
			d.Current = newUUID() // new-current-uuid --clear-bitmap
		}
	}
	for _, m := range r.Peers(n) {
		if !allUpToDate(r, m) {
			w.StartSync(r, n, m)
		}
	}
	return nil
}
