// Package charts tests the three Helm charts: each passes `helm lint` (through the
// Helm SDK), renders, and what it renders is accepted by a real kube-apiserver;
// the roles grant exactly the rules generated from the controllers'
// +kubebuilder:rbac markers; and the protectionzone chart installs beside
// upstream Ramen's CRDs without Helm skipping any of its own.
package charts
