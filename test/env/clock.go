package env

import (
	"sync/atomic"
	"time"
)

// SteppedClock is the real clock moved by a settable step: a test jumps a
// process's clock forward or back while time goes on passing.
type SteppedClock struct {
	offset atomic.Int64
}

// Now is the real time plus the step.
func (c *SteppedClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Since is the time from t to Now.
func (c *SteppedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Step moves the clock by d (negative: back).
func (c *SteppedClock) Step(d time.Duration) { c.offset.Add(int64(d)) }
