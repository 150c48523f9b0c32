package cli

import (
	"context"
	"os/user"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// auditAnnotations record on a request who asked for it and why, besides the
// API server's own audit log, so that `kubectl get -o yaml` shows it.
func (o *Options) auditAnnotations(ctx context.Context, reason string) map[string]string {
	a := map[string]string{RequestedByAnnotation: o.whoAmI(ctx)}
	if reason != "" {
		a[ReasonAnnotation] = reason
	}
	return a
}

// whoAmI is the user the quorum cluster authenticates the CLI as; the local
// user name when the cluster does not say (SelfSubjectReview not allowed).
func (o *Options) whoAmI(ctx context.Context) string {
	if c, err := o.Quorum(); err == nil {
		r := &authenticationv1.SelfSubjectReview{}
		if err := c.Create(ctx, r); err == nil && r.Status.UserInfo.Username != "" {
			return r.Status.UserInfo.Username
		}
	}
	if u, err := user.Current(); err == nil {
		return "local:" + u.Username
	}
	return "unknown"
}
