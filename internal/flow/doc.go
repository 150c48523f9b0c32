// Package flow holds what every siterecovery reconciler shares: running a
// reconcile as a list of small phases, typed errors that carry a condition reason
// and a requeue interval, and turning both into one ctrl.Result in one place.
package flow
