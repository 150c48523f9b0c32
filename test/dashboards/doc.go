// Package dashboards checks that the alerts and Grafana dashboards the
// quorum-control-plane chart ships name only metrics that quorum-manager's
// packages register on controller-runtime's registry.
package dashboards
