package sim

import (
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"time"
)

// cmdError is a failed command: message for stderr plus exit code.
type cmdError struct {
	msg  string
	code int
}

func (e *cmdError) Error() string { return e.msg }

func fail(code int, format string, a ...any) error {
	return &cmdError{msg: fmt.Sprintf(format, a...), code: code}
}

// Drbdadm implements `drbdadm [-c FILE] [--dry-run] CMD [--force] [--max-peers=N] RES`.
func Drbdadm(args []string, env Env, stdout io.Writer) error {
	if len(args) == 1 && args[0] == "--version" {
		return printVersion(env, stdout)
	}
	cfgPath := "/etc/drbd.conf"
	var cmd, res string
	force, discard, maxPeers := false, false, 1
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || a == "--config-file":
			if i+1 >= len(args) {
				return fail(20, "option %s requires an argument", a)
			}
			cfgPath = args[i+1]
			i++
		case strings.HasPrefix(a, "--config-file="):
			cfgPath = strings.TrimPrefix(a, "--config-file=")
		case a == "--force":
			force = true
		case a == "--discard-my-data":
			discard = true
		case strings.HasPrefix(a, "--max-peers="):
			n, err := strconv.Atoi(strings.TrimPrefix(a, "--max-peers="))
			if err != nil || n < 1 || n > 31 {
				return fail(20, "drbdadm: bad --max-peers %q", a)
			}
			maxPeers = n
		case strings.HasPrefix(a, "-"): // --max-peers=N and friends: accepted, not modelled
		case cmd == "":
			cmd = a
		case res == "":
			res = a
		}
	}
	if cmd == "" || res == "" {
		return fail(20, "USAGE: drbdadm [-c FILE] COMMAND RESOURCE")
	}
	cfgs, err := LoadResource(cfgPath, res)
	if err != nil {
		return fail(10, "%v", err)
	}
	rc, ok := cfgs[res]
	if !ok {
		return fail(10, "'%s' not defined in your config.", res)
	}
	if _, ok := rc.Hosts[env.Node]; !ok {
		return fail(10, "'%s' not defined in your config (for this host).", res)
	}
	if err := refuseTLS(env, rc, cmd); err != nil {
		return err
	}
	return Update(env.StateDir, func(w *World) error {
		w.touch(res) // a command changes its own resource alone
		r := w.syncConfig(rc)
		n := r.Nodes[env.Node]
		// Quorum options are the local node's: each node applies its own file.
		n.Quorum, n.OnNoQuorum = rc.Quorum, rc.OnNoQuorum
		switch cmd {
		case "create-md":
			return createMD(w, r, n, force, maxPeers)
		case "up":
			if n.Up {
				return fail(10, "%s: Failure: (161) Minor or volume exists already (delete it first)\nCommand 'drbdsetup new-minor %s %d 0' terminated with exit code 10", res, res, firstMinor(r))
			}
			n.Configured, n.Auth = configuredPeers(rc, env.Node), rc.authKey()
			return up(r, n)
		case "adjust":
			n.Configured, n.Auth = configuredPeers(rc, env.Node), rc.authKey()
			if n.Up {
				return nil
			}
			return up(r, n)
		case "primary":
			return primary(w, r, n, force)
		case "secondary":
			if !n.Up {
				return fail(10, "%s: No such resource", res)
			}
			if n.Role == "Primary" && n.anyOpen(time.Now()) {
				return deviceInUse(r, "secondary")
			}
			if n.Role == "Primary" {
				if err := demoteBehindInFlight(w, r, n); err != nil {
					return err
				}
			}
			n.Role = "Secondary"
			return nil
		case "disconnect":
			if !n.Up {
				return fail(10, "%s: No such resource", res)
			}
			if n.StandAlone == nil {
				n.StandAlone = map[string]bool{}
			}
			for _, m := range r.Peers(n) {
				n.StandAlone[m.Host] = true
			}
			return nil
		case "connect":
			if !n.Up {
				return fail(10, "%s: No such resource", res)
			}
			n.StandAlone = nil
			n.DiscardMyData = discard
			return nil
		case "down":
			if n.Up && n.anyOpen(time.Now()) {
				return deviceInUse(r, "down")
			}
			if n.Up {
				r.DrainLag() // a graceful down flushes in-flight writes
			}
			n.Up, n.Departed, n.Role = false, true, "Secondary"
			// down destroys the node's connections: the next up starts them
			// connecting, with no StandAlone nor --discard-my-data left over
			// (drbd_nl.c, adm_down tears down every connection). A peer's
			// StandAlone connection to it stays until that peer connects.
			n.StandAlone, n.DiscardMyData = nil, false
			return nil
		}
		return fail(20, "drbdadm: unknown command '%s'", cmd)
	})
}

// syncConfig folds the node's view of the config into the shared
// resource (last writer wins, like running adjust everywhere).
func (w *World) syncConfig(rc *ResConfig) *Res {
	r := w.Resources[rc.Name]
	if r == nil {
		r = &Res{Name: rc.Name, Nodes: map[string]*Node{}, Partitioned: w.LinksCut}
		w.Resources[rc.Name] = r
	}
	r.Protocol, r.SndBufKiB = rc.Protocol, rc.SndBufKiB
	r.AfterSB = rc.AfterSB
	r.Volumes = maps.Clone(rc.Volumes)
	for host, h := range rc.Hosts {
		n := r.Nodes[host]
		if n == nil {
			n = &Node{Host: host, Role: "Secondary", Disk: map[int]string{}, Read: map[int]uint64{},
				Written: map[int]uint64{}, Sent: map[string]uint64{}, Recv: map[string]uint64{}}
			r.Nodes[host] = n
		}
		n.NodeID, n.Addr = h.NodeID, h.Addr
	}
	return r
}

// configuredPeers are the hosts of a node's resource file other than itself.
func configuredPeers(rc *ResConfig, self string) map[string]bool {
	out := map[string]bool{}
	for h := range rc.Hosts {
		if h != self {
			out[h] = true
		}
	}
	return out
}

// deviceInUse is DRBD's SS_DEVICE_IN_USE refusal (drbd kernel drbd_state.c,
// message from drbd_strings.c), as drbdadm relays drbdsetup's failure.
func deviceInUse(r *Res, cmd string) error {
	return fail(11, "%s: State change failed: (-12) Device is held open by someone\nCommand 'drbdsetup %s %s' terminated with exit code 11", r.Name, cmd, r.Name)
}

func createMD(w *World, r *Res, n *Node, force bool, maxPeers int) error {
	if n.Up {
		return fail(10, "Device '%d' is configured!\nCommand 'drbdmeta %d v09 %s internal create-md' terminated with exit code 20", firstMinor(r), firstMinor(r), r.Volumes[0].Disk)
	}
	if n.MD && !force {
		return fail(10, "Found valid meta data in the expected location.\nDo you really want to overwrite the existing meta-data?\nOperation canceled.")
	}
	devs, err := layoutDevs(r, maxPeers)
	if err != nil {
		return err
	}
	n.MD = true
	n.Devs = devs
	for v := range r.Volumes {
		n.Disk[v] = "Inconsistent"
	}
	// Fresh metadata knows nothing: any UpToDate peer must resync it fully,
	// and writes this node still had in flight to a peer are gone with it.
	for _, m := range r.Peers(n) {
		clear(r.Pair(n.Host, m.Host).Lag)
		if allUpToDate(r, m) {
			w.StartSync(r, m, n)
		}
	}
	return nil
}

func up(r *Res, n *Node) error {
	if !n.MD {
		v := r.Volumes[0]
		return fail(1, "No valid meta data found\nCommand 'drbdmeta %d v09 %s internal apply-al' terminated with exit code 255", v.Minor, v.Disk)
	}
	if err := attachCheck(r, n); err != nil {
		return err
	}
	for v := range r.Volumes {
		if n.Disk[v] == "" {
			n.Disk[v] = "Inconsistent"
		}
	}
	n.Up, n.Departed, n.Role = true, false, "Secondary"
	return nil
}

func primary(w *World, r *Res, n *Node, force bool) error {
	if !n.Up {
		return fail(10, "%s: No such resource", r.Name)
	}
	if n.Role == "Primary" {
		return nil
	}
	for _, m := range r.Peers(n) {
		if r.Connected(n, m) && m.Role == "Primary" {
			return stateChangeFailed(r, -1, "Multiple primaries not allowed by config")
		}
	}
	switch {
	case !force && !r.HasQuorum(n):
		return stateChangeFailed(r, -25, "No quorum")
	case !force && !allUpToDate(r, n) && !hasUpToDatePeer(r, n):
		return stateChangeFailed(r, -2, "Need access to UpToDate data")
	case force && !allUpToDate(r, n):
		// Forcing makes our data the truth; every peer needs a full sync.
		for v := range r.Volumes {
			n.Disk[v] = "UpToDate"
			r.rotateUUID(n, v)
		}
		for _, m := range r.Peers(n) {
			w.StartSync(r, n, m)
		}
	case force && !connectedToAny(r, n):
		// A forced promotion apart from every peer starts a new data
		// generation at once.
		for v := range r.Volumes {
			r.rotateUUID(n, v)
		}
	}
	if !force && !connectedToAll(r, n) {
		// Promoted with a peer away: a new generation with the first write.
		for _, d := range n.Devs {
			d.NewCur = true
		}
	}
	n.Role = "Primary"
	return nil
}

// demoteBehindInFlight delivers n's protocol A writes in flight to its
// connected peers before n demotes. In LINBIT/drbd a protocol A write
// completes once handed to the data socket (drbd_req.c __req_mod,
// HANDED_OVER_TO_NETWORK), and the role change is a two-phase commit sent on
// that same stream (drbd_state.c change_role -> change_cluster_wide_state;
// drbd_main.c conn_send_twopc_request, DATA_STREAM), which the peer's
// receiver handles in order (drbd_receiver.c drbdd): a peer that sees the
// primary gone has received its completed writes. A link that carries
// nothing (drain rate 0) holds the request behind them until it times out
// (drbd_state.c, SS_TIMEOUT; drbd_nl.c drbd_set_role gives up after its
// retries) and n stays Primary. The simulator delivers at once what a
// moving link would carry before the commit.
func demoteBehindInFlight(w *World, r *Res, n *Node) error {
	if r.Protocol != "A" {
		return nil
	}
	for _, m := range r.Peers(n) {
		if w.DrainRateKiBps == 0 && r.Connected(n, m) && r.inFlightKiB(n, m) > 0 {
			return fail(11, "%s: State change failed: (-23) Timeout in operation\nCommand 'drbdsetup secondary %s' terminated with exit code 11", r.Name, r.Name)
		}
	}
	r.drainLag(n)
	return nil
}

func stateChangeFailed(r *Res, code int, msg string) error {
	return fail(11, "%s: State change failed: (%d) %s\nCommand 'drbdsetup primary %s' terminated with exit code 11", r.Name, code, msg, r.Name)
}

func allUpToDate(r *Res, n *Node) bool {
	for v := range r.Volumes {
		if n.Disk[v] != "UpToDate" {
			return false
		}
	}
	return true
}

func hasUpToDatePeer(r *Res, n *Node) bool {
	for _, m := range r.Peers(n) {
		if r.Connected(n, m) && allUpToDate(r, m) && r.Pair(n.Host, m.Host).Source != n.Host {
			return true
		}
	}
	return false
}

func firstMinor(r *Res) int {
	best := -1
	for _, v := range r.Volumes {
		if best < 0 || v.Minor < best {
			best = v.Minor
		}
	}
	return best
}

func connectedToAny(r *Res, n *Node) bool {
	for _, m := range r.Peers(n) {
		if r.Connected(n, m) {
			return true
		}
	}
	return false
}

func connectedToAll(r *Res, n *Node) bool {
	for _, m := range r.Peers(n) {
		if n.configures(m) && !r.Connected(n, m) {
			return false
		}
	}
	return true
}

// layoutDevs is create-md's work for every volume of the resource: a volume
// whose disk (and external meta-disk) are regular files gets its metadata
// written where drbdmeta puts it, after drbdmeta's check for a file system
// that the metadata would truncate; other volumes only counters.
func layoutDevs(r *Res, maxPeers int) (map[int]*Dev, error) {
	devs := map[int]*Dev{}
	for _, v := range sortedVols(r) {
		vol := r.Volumes[v]
		d := &Dev{Backing: vol.Disk, Meta: vol.Meta, Current: uuidJustCreated, MaxPeers: maxPeers}
		devs[v] = d
		size, ok := regularSize(vol.Disk)
		if !ok {
			continue
		}
		metaPath := vol.Disk
		if vol.Meta != "" {
			metaSize, ok := regularSize(vol.Meta)
			if !ok {
				continue
			}
			if metaSize < soMuch {
				return nil, fail(10, "%s is only %d bytes. That's not enough.\nCommand 'drbdmeta %d v09 %s flex-external create-md' terminated with exit code 10",
					vol.Meta, metaSize, vol.Minor, vol.Meta)
			}
			d.Layout = ExternalLayout(size, metaSize, maxPeers)
			metaPath = vol.Meta
		} else {
			if size < soMuch {
				return nil, fail(10, "%s is only %d bytes. That's not enough.\nCommand 'drbdmeta %d v09 %s internal create-md' terminated with exit code 10",
					vol.Disk, size, vol.Minor, vol.Disk)
			}
			d.Layout = InternalLayout(size, maxPeers)
		}
		if err := checkExistingData(metaPath, d.Layout); err != nil {
			return nil, err
		}
		d.File = true
	}
	for _, v := range sortedVols(r) {
		d := devs[v]
		if !d.File {
			continue
		}
		metaPath := d.Backing
		if d.Meta != "" {
			metaPath = d.Meta
		}
		if err := writeMetadata(metaPath, d.Layout, d.Current); err != nil {
			return nil, fail(20, "writing meta data to %s: %v", metaPath, err)
		}
	}
	return devs, nil
}
