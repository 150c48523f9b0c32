// Package kstatus checks, on real API servers, that every kind the product
// reconciles reads as kstatus (sigs.k8s.io/cli-utils pkg/kstatus/status), and
// so kubectl wait, Argo CD and Flux, say it should through a request's life:
// InProgress while it runs, Current once it succeeded, Failed once it failed.
package kstatus
