package drbd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"time"
)

// Streamer follows drbd state through drbdsetup events2.
//
// Run first takes a one-shot snapshot (`events2 --now --statistics`,
// which exits after the initial dump) and then keeps a long-running
// `events2 --full --statistics` alive, restarting it with exponential
// backoff whenever it exits. Each restart starts with a full `exists`
// dump, which a Tracker uses to resync (see Tracker).
type Streamer struct {
	Exec          Executor
	DrbdsetupPath string // default "drbdsetup"
	// Handle receives every parsed event, in order, from one goroutine.
	Handle func(Event)
	// OnError, if set, receives unparsable lines and process exits; the
	// stream carries on regardless.
	OnError    func(error)
	MinBackoff time.Duration // default 500ms
	MaxBackoff time.Duration // default 30s
}

// Run streams until ctx is cancelled and then returns ctx.Err().
func (s *Streamer) Run(ctx context.Context) error {
	ex := s.Exec
	if ex == nil {
		ex = OSExecutor{}
	}
	bin := s.DrbdsetupPath
	if bin == "" {
		bin = "drbdsetup"
	}
	minB, maxB := s.MinBackoff, s.MaxBackoff
	if minB <= 0 {
		minB = 500 * time.Millisecond
	}
	if maxB < minB {
		maxB = max(30*time.Second, minB)
	}

	if out, err := ex.Run(ctx, bin, "events2", "--now", "--statistics"); err != nil {
		s.fail(fmt.Errorf("events2 snapshot: %w", err))
	} else {
		s.consume(bytes.NewReader(out))
	}

	backoff := minB
	for ctx.Err() == nil {
		healthy := s.follow(ctx, ex, bin)
		if ctx.Err() != nil {
			break
		}
		if healthy {
			backoff = minB // it worked for a while: retry quickly
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxB)
	}
	return ctx.Err()
}

// follow runs one long-lived events2 process; it reports whether the
// process got through its initial dump (i.e. was healthy, not crashing
// on start).
func (s *Streamer) follow(ctx context.Context, ex Executor, bin string) bool {
	out, wait, err := ex.Start(ctx, bin, "events2", "--full", "--statistics")
	if err != nil {
		s.fail(fmt.Errorf("events2 start: %w", err))
		return false
	}
	sawMarker := s.consume(out)
	_ = out.Close()
	err = wait()
	if ctx.Err() == nil {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		s.fail(fmt.Errorf("events2 exited: %w", err))
	}
	return sawMarker
}

func (s *Streamer) consume(r io.Reader) (sawMarker bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		ev, err := ParseEvent(line)
		if err != nil {
			s.fail(err)
			continue
		}
		if ev.IsInitialDone() {
			sawMarker = true
		}
		if s.Handle != nil {
			s.Handle(ev)
		}
	}
	if err := sc.Err(); err != nil {
		s.fail(fmt.Errorf("events2 read: %w", err))
	}
	return sawMarker
}

func (s *Streamer) fail(err error) {
	if s.OnError != nil {
		s.OnError(err)
	}
}
