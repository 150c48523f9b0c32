package env

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLatencyProxy: bytes pass unchanged both ways; with a delay set, an
// answer comes no sooner than a delay each way; a target that is gone
// drops the client's connection.
func TestLatencyProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte("echo " + line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	p := StartLatencyProxy(t, ln.Addr().String())
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(msg string) (string, time.Duration) {
		t.Helper()
		start := time.Now()
		_, err := c.Write([]byte(msg + "\n"))
		require.NoError(t, err)
		got, err := r.ReadString('\n')
		require.NoError(t, err)
		return got, time.Since(start)
	}
	got, _ := roundTrip("ping")
	require.Equal(t, "echo ping\n", got)

	p.SetDelay(150 * time.Millisecond)
	got, took := roundTrip("slow")
	require.Equal(t, "echo slow\n", got)
	require.GreaterOrEqual(t, took, 300*time.Millisecond, "delayed each way")

	p.SetDelay(0)
	require.NoError(t, ln.Close())
	c2, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c2.Close()
	require.NoError(t, c2.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = c2.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "with its target gone the proxy drops the connection")
}
