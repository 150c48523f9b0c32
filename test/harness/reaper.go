package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A test binary that dies without running its cleanups (a `go test -timeout` panic,
// SIGKILL) leaves its etcd and kube-apiserver processes running, because envtest starts
// them in their own process groups. Every zone therefore records its owner in
// ownerFile; StartE reaps zones whose owner is gone: it kills their processes (found by
// the zone directory in their command line), deletes their data and keeps their logs.

const ownerFile = "owner"

// zoneDirPattern matches the directories StartE creates.
const zoneDirPattern = "siterecovery-zone-*"

// writeOwner records this process (pid and start time, against pid reuse) in dir.
func writeOwner(dir string) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(processIdentity(os.Getpid())), 0o600)
}

// processIdentity is "pid starttime" from /proc, or "" if the process does not exist.
func processIdentity(pid int) string {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	// Field 22 is the start time; the command name (field 2) may contain spaces, so
	// count from the closing parenthesis.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fmt.Sprintf("%d %s", pid, fields[19])
}

// reapAbandonedZones cleans up zones whose owning process is gone. It does nothing where
// /proc is not available.
func reapAbandonedZones() {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), zoneDirPattern))
	for _, dir := range dirs {
		owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // being created, stopped deliberately with logs kept, or not ours
		}
		pid, err := strconv.Atoi(strings.Fields(string(owner) + " x")[0])
		if err != nil || processIdentity(pid) == string(owner) {
			continue // still running
		}
		for _, p := range processesUnder(dir) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			_ = os.RemoveAll(filepath.Join(dir, e.Name(), etcdDataDir))
			_ = os.RemoveAll(filepath.Join(dir, e.Name(), certDir))
		}
		_ = os.Remove(filepath.Join(dir, ownerFile))
	}
}

// processesUnder returns the pids of etcd and kube-apiserver processes whose command line
// names a path inside dir.
func processesUnder(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if base := filepath.Base(args[0]); base != "etcd" && base != "kube-apiserver" {
			continue
		}
		if strings.Contains(string(cmdline), dir+string(filepath.Separator)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
