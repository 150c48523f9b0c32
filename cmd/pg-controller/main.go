// Command pg-controller runs on every workload cluster: the ProtectionGroup,
// and VolumeReplicationGroup reconcilers. It
// talks to its own cluster's API server only.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/siterecovery/siterecovery/internal/workload/setup"
)

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func main() {
	var o setup.Options
	var p setup.PGOptions
	o.BindFlags(flag.CommandLine, "pg-controller.siterecovery.trilio.io")
	flag.StringVar(&o.Namespace, "namespace", "", "restrict the controller to one namespace (default: all)")
	flag.StringVar(&p.OperatorNamespace, "operator-namespace", setup.DefaultOperatorNamespace, "namespace of the shared global VolumeGroupReplications")
	flag.StringVar(&p.ProbeImage, "probe-image", setup.DefaultProbeImage, "image of the boot plans' TCP and HTTP gate probe Jobs (its entrypoint is siterecovery-probe)")
	flag.BoolVar(&p.VolSyncServiceExport, "volsync-service-export", false, "export each VolSync destination's Service with an MCS ServiceExport and send to its clusterset name instead of the address the ReplicationDestination publishes")
	flag.Func("admission-allowed-users", "comma-separated users who may start standby VMs and change replication objects of every DR namespace (pg-controller's and the agent's service accounts)", func(v string) error {
		p.Allowed.Users = splitList(v)
		return nil
	})
	p.Allowed.Groups = setup.DefaultAdmissionGroups
	flag.Func("admission-allowed-groups", "comma-separated groups who may do the same (default: "+strings.Join(setup.DefaultAdmissionGroups, ",")+")", func(v string) error {
		p.Allowed.Groups = splitList(v)
		return nil
	})
	flag.Func("admission-dr-namespaces", "comma-separated DR namespaces whose quorum-manager ServiceAccount may do the same, each only for its own DR namespace's objects", func(v string) error {
		p.Allowed.DRNamespaces = splitList(v)
		return nil
	})
	// Never nil: without the flag, a quorum-manager acts on the VMs of no
	// application namespace, as the chart's guard lets it claim none.
	p.Allowed.ApplicationNamespaces = map[string][]string{}
	flag.Func("admission-application-namespaces", "comma-separated <DR namespace>/<application namespace> pairs: the namespaces whose VMs each DR namespace's quorum-manager may start, delete or give replicated disks (default: none)", func(v string) error {
		for _, pair := range splitList(v) {
			dr, app, ok := strings.Cut(pair, "/")
			if !ok || dr == "" || app == "" {
				return fmt.Errorf("%q is no <DR namespace>/<application namespace> pair", pair)
			}
			p.Allowed.ApplicationNamespaces[dr] = append(p.Allowed.ApplicationNamespaces[dr], app)
		}
		return nil
	})
	flag.StringVar(&p.Allowed.QuorumServiceAccount, "admission-quorum-service-account", setup.DefaultQuorumServiceAccount, "quorum-manager's ServiceAccount in each --admission-dr-namespaces namespace")
	flag.Parse()
	os.Exit(setup.Run(o, p))
}
