package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one of the product's binaries run by the sandbox.
type process struct {
	name, bin, kubeconfig string
	args, env             []string
	cmd                   *exec.Cmd
	done                  chan struct{}
}

func (p *process) start(logDir string) error {
	log, err := os.Create(filepath.Join(logDir, p.name+".log"))
	if err != nil {
		return err
	}
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Env = append(append(os.Environ(), "KUBECONFIG="+p.kubeconfig), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	// Its own process group, so that Ctrl-C reaches it only through stop().
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return err
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); _ = log.Close(); close(p.done) }()
	return nil
}

// stop asks the process to stop and kills it if it does not within 10 seconds.
func (p *process) stop() {
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
