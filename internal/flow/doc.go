// Package flow is the reconcile contract every siterecovery controller follows:
//   - a reconcile is phases working on a scope, run by RunPhases (a fixed list)
//     or a Runner (a request that moves from phase to phase);
//   - a phase fails with a typed Error, Waiting, Stalled or Transient with a
//     condition reason, and Result turns it into a ctrl.Result in one place;
//   - a request kind records its phases through a Trail: the phase entered and
//     when, terminal or not, and what it waits on, shown the same way on every
//     kind;
//   - a StatusWriter writes the status with an update that carries the
//     resourceVersion it was read with, paced by a Throttle, a Settle or a Coalescer;
//   - DelayedSource and DelayedHandler merge a burst of events about one
//     object into one reconcile.
//
// It is a library of all tiers; it imports no controller.
package flow
