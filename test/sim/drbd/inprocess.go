package drbdsim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/siterecovery/siterecovery/internal/drbd"
	"github.com/siterecovery/siterecovery/test/sim/drbd/internal/sim"
)

// Executor runs the simulated drbdadm and drbdsetup of one node inside the test
// process: the same simulator and shared state as the built binaries, without a
// fork per command, for tests and benchmarks that measure the product rather
// than process start-up. It implements drbd.Executor.
type Executor struct {
	// StateDir is the simulated network's shared state, as DRBDSIM_STATE_DIR.
	StateDir string
	// Node is the simulated host name, as DRBDSIM_NODE.
	Node string
	// UtilsVersion and KernelVersion are the node's simulated drbd-utils and
	// DRBD module, as DRBDSIM_UTILS_VERSION and DRBDSIM_KERNEL_VERSION ("":
	// the simulator's defaults, drbd-utils 9.22.0 without TLS).
	UtilsVersion, KernelVersion string
}

var _ drbd.Executor = Executor{}

// Run implements drbd.Executor.
func (e Executor) Run(_ context.Context, bin string, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	argv := append([]string{filepath.Base(bin)}, args...)
	if code := sim.Main(argv, e.env(), &stdout, &stderr); code != 0 {
		return stdout.Bytes(), exitError(argv, code, stderr.String())
	}
	return stdout.Bytes(), nil
}

func (e Executor) env() sim.Env {
	return sim.Env{StateDir: e.StateDir, Node: e.Node, UtilsVersion: e.UtilsVersion, KernelVersion: e.KernelVersion}
}

func (e Executor) envStop(stop <-chan struct{}) sim.Env {
	env := e.env()
	env.Stop = stop
	return env
}

// Start implements drbd.Executor: the command runs in a goroutine until it ends
// or ctx is cancelled.
func (e Executor) Start(ctx context.Context, bin string, args ...string) (io.ReadCloser, func() error, error) {
	argv := append([]string{filepath.Base(bin)}, args...)
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := sim.Main(argv, e.envStop(ctx.Done()), pw, &stderr)
		_ = pw.Close()
		done <- code
	}()
	wait := func() error {
		code := <-done
		if code != 0 {
			return exitError(argv, code, stderr.String())
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return nil
	}
	return pr, wait, nil
}

func exitError(argv []string, code int, stderr string) error {
	return &drbd.ExitError{Cmd: strings.Join(argv, " "), ExitCode: code,
		Stderr: strings.TrimSpace(stderr), Err: fmt.Errorf("exit status %d", code)}
}
