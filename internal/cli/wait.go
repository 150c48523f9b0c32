package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// pollEvery is how often --wait reads the request: phases last seconds, and a
// watch would need a second permission (watch) an operator role may lack.
const pollEvery = 250 * time.Millisecond

// progress prints a request's phases as they are entered, and its message
// whenever it changes (what the request waits for).
type progress struct {
	w  io.Writer
	t0 time.Time
	// anchor is t0 on the CLI's clock: the latest phase seen at the first
	// read is taken as entered then. Messages carry no time of their own.
	anchor  time.Time
	shown   int
	message string
}

// update prints what is new; offsets count from the first phase, as the
// controller stamped it, so that the CLI's clock does not matter.
func (p *progress) update(h []srv1alpha1.PhaseTransition, message string) {
	if len(h) == 0 {
		return
	}
	if p.t0.IsZero() {
		p.t0 = h[0].Time.Time
		p.anchor = time.Now().Add(-h[len(h)-1].Time.Sub(p.t0))
	}
	for _, t := range h[p.shown:] {
		fmt.Fprintf(p.w, "%8s  %-18s %s\n", "+"+since(t.Time.Sub(p.t0)), t.Phase, t.Message)
		if t.Message != "" {
			p.message = t.Message
		}
	}
	p.shown = len(h)
	if message != "" && message != p.message {
		fmt.Fprintf(p.w, "%8s  %-18s waiting: %s\n", "~"+since(time.Since(p.anchor)), "", message)
		p.message = message
	}
}

// timeline prints every phase with its start offset and how long it lasted.
func timeline(w io.Writer, h []srv1alpha1.PhaseTransition, end time.Time) {
	if len(h) == 0 {
		return
	}
	t := newTable(w, "PHASE", "AT", "TOOK", "MESSAGE")
	t0 := h[0].Time.Time
	for i, tr := range h {
		next := end
		if i+1 < len(h) {
			next = h[i+1].Time.Time
		}
		took := ""
		if i+1 < len(h) {
			took = since(next.Sub(tr.Time.Time))
		}
		t.row(tr.Phase, "+"+since(tr.Time.Sub(t0)), took, tr.Message)
	}
	_ = t.flush()
	if !end.IsZero() {
		fmt.Fprintf(w, "total %s\n", since(end.Sub(t0)))
	}
}

// phaseSplit prints where each phase's time went: waiting on the workload
// clusters (VMs, DRBD), held (lock, fencing, taint), or in the control plane.
func phaseSplit(w io.Writer, timings []srv1alpha1.PhaseTiming) {
	if len(timings) == 0 {
		return
	}
	fmt.Fprintln(w, "\nWhere the time went:")
	t := newTable(w, "PHASE", "WORKLOAD CLUSTERS", "HELD", "CONTROL PLANE")
	var wl, hd, cp int64
	for _, p := range timings {
		t.row(p.Phase, ms(p.WorkloadMilliseconds), ms(p.HeldMilliseconds), ms(p.ControlPlaneMilliseconds))
		wl, hd, cp = wl+p.WorkloadMilliseconds, hd+p.HeldMilliseconds, cp+p.ControlPlaneMilliseconds
	}
	t.row("total", ms(wl), ms(hd), ms(cp))
	_ = t.flush()
}

func ms(n int64) string { return since(time.Duration(n) * time.Millisecond) }

// waitFailover follows a FailoverRequest until it ends, ctx ends (Ctrl-C) or
// timeout passes.
// The phases go to stdout with the default output, else to stderr and the
// finished request to stdout in the -o format.
func (o *Options) waitFailover(ctx context.Context, c client.Client, ns, name string, timeout time.Duration, pf *printFlags) error {
	p := &progress{w: o.stream(pf)}
	fr := &srv1alpha1.FailoverRequest{}
	err := poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, fr); err != nil {
			return false, err
		}
		p.update(fr.Status.PhaseHistory, fr.Status.Message)
		return failoverDone(fr.Status.Phase), nil
	})
	if err != nil {
		return stillRunning(err, "FailoverRequest", ns, name, string(fr.Status.Phase))
	}
	// The final phase's entry is when the request ended, to the microsecond.
	end := time.Now()
	if h := fr.Status.PhaseHistory; len(h) > 0 {
		end = h[len(h)-1].Time.Time
	}
	if !pf.human() {
		if err := pf.printObj(fr, o.Out); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(o.Out, "\nTimeline of FailoverRequest "+name+":")
		timeline(o.Out, fr.Status.PhaseHistory, end)
		phaseSplit(o.Out, fr.Status.PhaseTimings)
		bootTable(o.Out, bootStageStates(&fr.Status, end), fr.Status.Boot != nil && fr.Status.Boot.Stopped)
	}
	if fr.Status.Phase == srv1alpha1.FailoverFailed {
		return exitf(ExitRequestFailed, "FailoverRequest %s/%s failed: %s", ns, name, fr.Status.Message)
	}
	return nil
}

// stream is where --wait prints the phases: stdout for the default output,
// stderr when stdout carries the -o format.
func (o *Options) stream(pf *printFlags) io.Writer {
	if pf.human() {
		return o.Out
	}
	return o.ErrOut
}

// poll calls cond every pollEvery until it reports done, fails, ctx ends or
// timeout (if not 0) passes.
func poll(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		done, err := cond(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stillRunning turns an interrupted wait into ExitStillRunning, saying that
// the request goes on and how to follow it.
func stillRunning(err error, kind, ns, name, phase string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return exitf(ExitStillRunning, "stopped waiting; %s %s/%s goes on (phase %s). Follow it: kubectl siterecovery status -n %s",
			kind, ns, name, phaseOr(phase), ns)
	}
	return err
}
