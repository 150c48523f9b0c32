package boot

import (
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsOptions is the metrics endpoint: plain HTTP, or with MetricsSecure
// HTTPS behind the API server's authentication and authorization, so that a
// scraper needs a token bound to a role that may get /metrics (the charts'
// metrics-reader ClusterRole) and the binary's identity may create TokenReviews
// and SubjectAccessReviews (the charts bind it to system:auth-delegator).
func (o Options) metricsOptions() metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.CertDir = o.MetricsCertDir
	}
	return m
}
