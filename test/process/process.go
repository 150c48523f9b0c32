// Package process runs the product's binaries as operating-system processes,
// as the sandbox and the tests that install the charts do: each in a process
// group of its own, its output in a log file, stopped with SIGTERM and killed
// if it does not stop in time. Build compiles them.
package process

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Process is one of the product's binaries.
type Process struct {
	// Name names the log file, <logDir>/<Name>.log.
	Name string
	// Bin is the binary's path.
	Bin string
	// Kubeconfig is the process's $KUBECONFIG.
	Kubeconfig string
	// Args are its arguments; Env is added to this process's environment.
	Args, Env []string

	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// Start starts the process, its output going to <logDir>/<Name>.log.
func (p *Process) Start(logDir string) error {
	p.log = filepath.Join(logDir, p.Name+".log")
	// Appended to: a process started again after Stop or Kill keeps its
	// earlier output.
	log, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(p.Bin, p.Args...)
	p.cmd.Env = append(append(os.Environ(), "KUBECONFIG="+p.Kubeconfig), p.Env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	// Its own process group, so that Ctrl-C reaches it only through Stop;
	// killed if this process dies first (a test binary that timed out must not
	// leave controllers running against the next test's ports).
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		_ = log.Close()
		return err
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); _ = log.Close(); close(p.done) }()
	return nil
}

// LogPath is the file the process writes its output to.
func (p *Process) LogPath() string { return p.log }

// Exited reports whether a started process has ended, and how ("exit
// status 1").
func (p *Process) Exited() (state string, exited bool) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.String(), true
	default:
		return "", false
	}
}

// Stop asks the process to stop and kills it if it does not within 10 seconds.
func (p *Process) Stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill ends the process at once, as a power cut would, and waits for it.
func (p *Process) Kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Build compiles the main packages pkgs (./cmd/quorum-manager, ...) of the
// module in root into dir, one binary each, named after its folder.
func Build(ctx context.Context, root, dir string, pkgs ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = root
	return cmd.CombinedOutput()
}
