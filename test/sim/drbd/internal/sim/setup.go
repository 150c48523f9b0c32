package sim

import (
	"bufio"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// fileRecheck is how often an idle `events2` reads a state file that
// seems unchanged.
const fileRecheck = time.Second

// PollInterval is how often `events2` re-reads the shared state.
const PollInterval = 50 * time.Millisecond

// Drbdsetup implements `drbdsetup status --json` and `drbdsetup events2`.
func Drbdsetup(args []string, env Env, stdout io.Writer) error {
	if len(args) == 0 {
		return fail(20, "USAGE: drbdsetup COMMAND [OPTIONS] [RESOURCE]")
	}
	cmd, only := args[0], ""
	flags := map[string]bool{}
	for _, a := range args[1:] {
		if len(a) > 1 && a[0] == '-' { // -x and --long alike
			flags[a] = true
		} else {
			only = a
		}
	}
	switch cmd {
	case "status":
		if !flags["--json"] {
			return fail(20, "drbdsim: only 'status --json' is simulated")
		}
		// Rendered under the lock: an in-memory world changes as soon as it is released.
		return update(env.StateDir, func(w *World) error {
			if only != "" && only != "all" {
				if r := w.Resources[only]; r == nil || r.Nodes[env.Node] == nil || !r.Nodes[env.Node].Up {
					return fail(10, "%s: No such resource", only)
				}
			}
			return w.writeStatusJSON(stdout, env.Node, only)
		}, false)
	case "events2":
		return events2(env, stdout, only, flags["--now"], flags["--timestamps"])
	case "help":
		if only == "new-peer" {
			return printNewPeerHelp(env, stdout)
		}
	}
	return fail(20, "drbdsim: drbdsetup %s is not simulated", cmd)
}

func events2(env Env, stdout io.Writer, only string, now, timestamps bool) error {
	out := bufio.NewWriter(stdout)
	emit := func(line string) error {
		if timestamps {
			line = time.Now().Format("2006-01-02T15:04:05.000000-07:00") + " " + line
		}
		if _, err := out.WriteString(line + "\n"); err != nil {
			return err
		}
		return nil
	}
	// busy is true while time alone changes the world; otherwise a state file
	// whose size and modification time did not change is not read again, which
	// keeps idle streams from competing for the lock with drbdadm.
	busy, statePath := true, filepath.Join(env.StateDir, "state.json")
	mem, inMemory := memoryWorld(env.StateDir)
	var seen os.FileInfo
	var readAt time.Time
	var seenVersion uint64
	// In memory, a stream renders again only the resources changed since its
	// last snapshot (objectsSince), unless time was moving them then or now; a
	// world read from its file has no versions and renders whole.
	var cache map[string][]object
	var rendered uint64
	snapshot := func() ([]object, error) {
		var objs []object
		if inMemory {
			seenVersion = mem.currentVersion()
		}
		err := update(env.StateDir, func(w *World) error {
			moving := w.timeDriven()
			if !inMemory || busy || moving {
				cache = nil
			}
			objs, cache = w.objectsSince(env.Node, only, rendered, cache)
			rendered, busy = w.version, moving
			if !inMemory {
				// Under the lock: the file just read. A stat after the
				// lock is released may see a newer file, unread, and the
				// stream would then miss that change until the next.
				readAt = time.Now()
				seen, _ = os.Stat(statePath)
			}
			return nil
		}, false)
		return objs, err
	}
	unchanged := func() bool {
		if inMemory {
			return !busy && mem.currentVersion() == seenVersion
		}
		// A file's identity can also repeat: a freed inode is reused by the
		// next state file, and its times come from a coarse clock, so a
		// change of the same size can look like none. Read it again once a
		// second.
		if busy || seen == nil || time.Since(readAt) > fileRecheck {
			return false
		}
		st, err := os.Stat(statePath)
		// Every write renames a new file into place, so the inode tells too.
		return err == nil && os.SameFile(st, seen) && st.Size() == seen.Size() && st.ModTime().Equal(seen.ModTime())
	}
	prev, err := snapshot()
	if err != nil {
		return err
	}
	for _, o := range prev {
		_ = emit("exists " + o.key + " " + o.fields)
	}
	_ = emit("exists -")
	if err := out.Flush(); err != nil || now {
		return nil
	}

	stop := env.Stop
	if stop == nil {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		done := make(chan struct{})
		go func() { <-sigs; close(done) }()
		stop = done
	}
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	var rate cadence
	for {
		changed := changes.wait()
		select {
		case <-stop:
			return nil
		case <-tick.C:
		case <-changed:
		}
		if unchanged() {
			continue
		}
		cur, err := snapshot()
		if err != nil {
			return err
		}
		cur = rate.broadcast(prev, cur, time.Now())
		for _, line := range diff(prev, cur) {
			_ = emit(line)
		}
		if err := out.Flush(); err != nil {
			return nil // reader went away: exit like drbdsetup on EPIPE
		}
		prev = cur
	}
}
