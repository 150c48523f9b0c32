// Package charts tests the three Helm charts: each passes `helm lint` (through the
// Helm SDK), renders, and what it renders is accepted by a real kube-apiserver.
package charts
