package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// killAPIServer ends the cluster's kube-apiserver at once, as a site outage
// does. Asked to stop, kube-apiserver would shut down gracefully, and that
// waits up to a minute for its clients' long-running requests, such as the
// watches of a controller's cache, to end; clients of a site that failed see
// their connections drop instead. It returns once the process is gone.
func (c *Cluster) killAPIServer() error {
	pid, err := c.apiServerPID()
	if err != nil {
		return err
	}
	// envtest starts the process as the leader of its own process group.
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver %d: %w", pid, err)
	}
	deadline := time.Now().Add(processStopTimeout)
	for processExists(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver %d still exists %s after SIGKILL", pid, processStopTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// apiServerPID finds the cluster's kube-apiserver among the processes: the
// one whose arguments name a file of the cluster's certificate directory.
func (c *Cluster) apiServerPID() (int, error) {
	certs := []byte(filepath.Join(c.Dir, certDir) + string(filepath.Separator))
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		args := bytes.Split(cmdline, []byte{0})
		if filepath.Base(string(args[0])) != "kube-apiserver" || !bytes.Contains(cmdline, certs) {
			continue
		}
		return strconv.Atoi(filepath.Base(d))
	}
	return 0, fmt.Errorf("no kube-apiserver process of cluster %q", c.Name)
}

// processExists: pid is running or not yet reaped.
func processExists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}
