// Package clusters gives the CLI clients of a zone's workload clusters, built
// from the zone's kubeconfig Secrets by the rules quorum-manager applies
// (kubeconfig.RESTConfig: no exec plugins, auth providers or files). A cluster the
// CLI cannot reach that way carries the reason instead of a client, so that
// every command can say why it shows the quorum cluster's view.
package clusters
