package remote

import "github.com/siterecovery/siterecovery/internal/kubeconfig"

// Limits bound how hard quorum-manager talks to one cluster.
type Limits = kubeconfig.Limits
