// Package kubeconfig reads the kubeconfig Secrets of a ProtectionZone's
// clusters under one set of rules, so that quorum-manager, its admission
// webhook, the CLI and the console accept and refuse the same kubeconfigs: the
// Secret must carry its credential (a token or client certificate) and the
// API server's CA itself, with no program, plugin, file, proxy, password or
// impersonation. Errors never contain the kubeconfig's content.
package kubeconfig
