package boot

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRetryWhileDown: a list waits through refused connections and returns
// once the API server answers; any other error, and a cancelled context,
// return at once.
func TestRetryWhileDown(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	calls := 0
	v, err := retryWhileDown(context.Background(), func() (int, error) {
		calls++
		if calls < 3 {
			return 0, refused
		}
		return 42, nil
	})
	require.NoError(t, err)
	require.Equal(t, 42, v)
	require.Equal(t, 3, calls)

	forbidden := errors.New("forbidden")
	calls = 0
	_, err = retryWhileDown(context.Background(), func() (int, error) { calls++; return 0, forbidden })
	require.ErrorIs(t, err, forbidden)
	require.Equal(t, 1, calls, "an answer of the API server is not retried here")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = retryWhileDown(ctx, func() (int, error) { return 0, refused })
	require.Error(t, err, "a stopped informer does not wait")
}
