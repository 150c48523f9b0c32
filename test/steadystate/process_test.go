package steadystate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one of the product's binaries, run against a cluster of the fleet.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// run starts the binary named by the prefix of name (before the cluster or
// node) with the cluster's kubeconfig; it stops when the test ends, or when
// stopped. Metrics are off unless args set --metrics-bind-address.
func (f *fleet) run(name, cluster string, env []string, args ...string) *process {
	bin := name
	for _, b := range []string{"quorum-manager", "pg-controller", "drbd-node-agent"} {
		if strings.HasPrefix(name, b) {
			bin = b
		}
	}
	kubeconfig := filepath.Join(f.dir, cluster+".kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		if err := os.WriteFile(kubeconfig, f.z.Clusters[cluster].Kubeconfig, 0o600); err != nil {
			f.t.Fatal(err)
		}
	}
	log, err := os.Create(filepath.Join(f.dir, name+".log"))
	if err != nil {
		f.t.Fatal(err)
	}
	p := &process{name: name, done: make(chan struct{})}
	// The last of a repeated flag wins: args come after the defaults.
	p.cmd = exec.Command(filepath.Join(f.bin, bin), append([]string{
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--zap-log-level=info"}, args...)...)
	p.cmd.Env = append(append(productEnv(), "KUBECONFIG="+kubeconfig), env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	// Its own process group, so that stop reaches its children too; killed with
	// the test process should that die first.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.t.Fatalf("starting %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); _ = log.Close(); close(p.done) }()
	f.procs = append(f.procs, p)
	f.t.Cleanup(p.stop)
	return p
}

// productEnv is this process's environment without the garbage collector
// settings the harness gives the API servers (collection off up to a memory
// limit): the binaries run with Go's defaults, as in a pod, so that their RSS
// is theirs.
func productEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			out = append(out, kv)
		}
	}
	return out
}

func (p *process) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// rss is the process's resident set size.
func (p *process) rss() (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for %s", p.name)
}

// cpu is the process's user and system CPU time so far.
func (p *process) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	line := string(b)
	f := strings.Fields(line[strings.LastIndexByte(line, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat of %s", p.name)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100, nil
}

// running reports whether the process is still alive.
func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}
