// Command pg-controller runs on every workload cluster: the ProtectionGroup,
// and VolumeReplicationGroup reconcilers. It
// talks to its own cluster's API server only.
package main

import (
	"flag"
	"os"

	"github.com/siterecovery/siterecovery/internal/workload/setup"
)

func main() {
	var o setup.Options
	var p setup.PGOptions
	o.BindFlags(flag.CommandLine, "pg-controller.siterecovery.trilio.io")
	flag.StringVar(&o.Namespace, "namespace", "", "restrict the controller to one namespace (default: all)")
	flag.StringVar(&p.OperatorNamespace, "operator-namespace", setup.DefaultOperatorNamespace, "namespace of the shared global VolumeGroupReplications")
	flag.Parse()
	os.Exit(setup.Run(o, p))
}
