package drbd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Executor runs external commands. Adm and Streamer go through it so
// tests can substitute fakes or the simulator.
type Executor interface {
	// Run executes bin and returns its stdout; a non-zero exit is an
	// error that includes the trimmed stderr.
	Run(ctx context.Context, bin string, args ...string) ([]byte, error)
	// Start launches a long-running bin and returns its stdout and a wait
	// function. Cancelling ctx kills the process; wait reports how it
	// ended (including stderr on failure).
	Start(ctx context.Context, bin string, args ...string) (io.ReadCloser, func() error, error)
}

// OSExecutor implements Executor with os/exec.
type OSExecutor struct {
	// Env is the commands' environment; nil means the agent's own.
	Env []string
}

// ExitError is returned for commands that ran and failed.
type ExitError struct {
	Cmd      string
	ExitCode int
	Stderr   string
	Err      error
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s: %v", e.Cmd, e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *ExitError) Unwrap() error { return e.Err }

// Run implements Executor.
func (e OSExecutor) Run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), wrapExit(bin, args, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// Start implements Executor.
func (e OSExecutor) Start(ctx context.Context, bin string, args ...string) (io.ReadCloser, func() error, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.Env
	stderr := &limitedBuffer{max: 64 << 10}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, wrapExit(bin, args, err, "")
	}
	wait := func() error {
		if err := cmd.Wait(); err != nil {
			return wrapExit(bin, args, err, stderr.String())
		}
		return nil
	}
	return out, wait, nil
}

func wrapExit(bin string, args []string, err error, stderr string) error {
	// drbdadm passes the shared secret to drbdsetup as an argument and repeats
	// a failed command line on stderr: neither may reach a message.
	e := &ExitError{Cmd: Redact(strings.TrimSpace(bin + " " + strings.Join(args, " "))), ExitCode: -1,
		Stderr: Redact(strings.TrimSpace(stderr)), Err: err}
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		e.ExitCode = xe.ExitCode()
	}
	return e
}

// limitedBuffer keeps the first max bytes of a stream so a chatty
// long-running process cannot grow memory without bound.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return l.buf.String() }
