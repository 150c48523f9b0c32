package drbd

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeExec replays canned outputs: Run answers the --now snapshot, each
// Start pops the next long-running output.
type fakeExec struct {
	mu     sync.Mutex
	calls  [][]string
	now    string
	starts []string
	runErr error
}

func (f *fakeExec) Run(_ context.Context, bin string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, append([]string{bin}, args...))
	return []byte(f.now), f.runErr
}

func (f *fakeExec) Start(ctx context.Context, bin string, args ...string) (io.ReadCloser, func() error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, append([]string{bin}, args...))
	if len(f.starts) == 0 {
		// Behave like a quiet, healthy stream until cancelled.
		pr, pw := io.Pipe()
		go func() { <-ctx.Done(); pw.Close() }()
		return pr, func() error { return ctx.Err() }, nil
	}
	out := f.starts[0]
	f.starts = f.starts[1:]
	return io.NopCloser(strings.NewReader(out)), func() error { return errors.New("exit status 1") }, nil
}

func TestStreamerRestartResyncsTracker(t *testing.T) {
	first := "exists resource name:a role:Primary\nexists resource name:b role:Secondary\nexists -\nchange resource name:a role:Secondary\n"
	second := "exists resource name:b role:Primary\nexists -\n"
	fx := &fakeExec{now: "exists resource name:a role:Primary\nexists -\n", starts: []string{first, "garbage line\n", second}}
	tr := NewTracker()
	var errs []error
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	s := &Streamer{Exec: fx, DrbdsetupPath: "/sim/drbdsetup", MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		Handle:  func(ev Event) { tr.Apply(ev) },
		OnError: func(err error) { errs = append(errs, err) }}
	go func() { done <- s.Run(ctx) }()

	require.Eventually(t, func() bool {
		snap := tr.Snapshot()
		return len(snap) == 1 && snap[0].Name == "b" && snap[0].Role == "Primary"
	}, 5*time.Second, 5*time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)

	fx.mu.Lock()
	defer fx.mu.Unlock()
	assert.Equal(t, []string{"/sim/drbdsetup", "events2", "--now", "--statistics"}, fx.calls[0])
	assert.Equal(t, []string{"/sim/drbdsetup", "events2", "--full", "--statistics"}, fx.calls[1])
	assert.GreaterOrEqual(t, len(fx.calls), 4, "snapshot + three starts")
	assert.NotEmpty(t, errs, "parse errors and exits are reported")
}

func TestAdmCommandLines(t *testing.T) {
	fx := &fakeExec{now: "[]"}
	a := &Adm{Exec: fx, DrbdadmPath: "adm", DrbdsetupPath: "setup", ConfigFile: "/etc/sr/drbd.conf"}
	ctx := context.Background()
	require.NoError(t, a.CreateMD(ctx, "r0", 7))
	require.NoError(t, a.Adjust(ctx, "r0"))
	require.NoError(t, a.Up(ctx, "r0"))
	require.NoError(t, a.Primary(ctx, "r0", false))
	require.NoError(t, a.Primary(ctx, "r0", true))
	require.NoError(t, a.Secondary(ctx, "r0"))
	require.NoError(t, a.Down(ctx, "r0"))
	st, err := a.Status(ctx, "r0")
	require.NoError(t, err)
	assert.Empty(t, st)
	c := "-c /etc/sr/drbd.conf "
	want := []string{
		"adm " + c + "create-md --force --max-peers=7 r0", "adm " + c + "adjust r0", "adm " + c + "up r0",
		"adm " + c + "primary r0", "adm " + c + "primary --force r0", "adm " + c + "secondary r0",
		"adm " + c + "down r0", "setup status --json --statistics r0",
	}
	var got []string
	for _, call := range fx.calls {
		got = append(got, strings.Join(call, " "))
	}
	assert.Equal(t, want, got)
}

func TestOSExecutorErrorIncludesStderr(t *testing.T) {
	_, err := OSExecutor{}.Run(context.Background(), "sh", "-c", "echo out; echo '  boom  ' >&2; exit 3")
	var xe *ExitError
	require.ErrorAs(t, err, &xe)
	assert.Equal(t, 3, xe.ExitCode)
	assert.Equal(t, "boom", xe.Stderr)
	assert.Contains(t, err.Error(), "boom")

	out, wait, err := OSExecutor{}.Start(context.Background(), "sh", "-c", "echo line; echo bad >&2; exit 2")
	require.NoError(t, err)
	data, _ := io.ReadAll(out)
	assert.Equal(t, "line\n", string(data))
	err = wait()
	require.ErrorAs(t, err, &xe)
	assert.Equal(t, "bad", xe.Stderr)
}
