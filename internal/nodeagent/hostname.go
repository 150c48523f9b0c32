package nodeagent

import (
	"fmt"
	"os"
	"strings"
)

// DrbdNodeEnv is the environment variable drbdadm takes as its host name in
// place of the kernel's (drbd-utils user/v9/drbdadm_main.c reads
// __DRBD_NODE__ after get_hostname(), for debugging). The agent's drbdadm
// children inherit its environment, so when it is set it is what they match
// `on` sections by, and the agent checks against it as well.
const DrbdNodeEnv = "__DRBD_NODE__"

// drbdHostname is the host name drbdadm matches `on <host>` sections by on this
// machine: $__DRBD_NODE__ when set and not empty, else the kernel's node name
// (gethostname(2), which is `uname -n`; drbd-utils user/v9/drbdtool_common.c
// get_hostname). The agent's DaemonSet runs with hostNetwork: true
// (charts/workload-control-plane), and a host-network pod shares the node's
// UTS namespace, so the name read here in the pod is the node's own hostname.
func drbdHostname() (string, error) {
	if h := os.Getenv(DrbdNodeEnv); h != "" {
		return h, nil
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading the host name drbdadm matches `on` sections by (uname -n): %w", err)
	}
	return h, nil
}

// drbdHostnamesEqual is drbdadm's rule for whether the name of an `on` section
// is this host (drbd-utils user/v9/drbdadm_parser.c hostnames_equal): names are
// compared without regard to case; when both have a domain part the whole names
// must be equal, otherwise only the parts before the first dot. So a node named
// by its FQDN matches a short kernel hostname, but two different FQDNs with the
// same first label do not.
func drbdHostnamesEqual(a, b string) bool {
	if strings.Contains(a, ".") && strings.Contains(b, ".") {
		return strings.EqualFold(a, b)
	}
	shortA, _, _ := strings.Cut(a, ".")
	shortB, _, _ := strings.Cut(b, ".")
	return strings.EqualFold(shortA, shortB)
}

// checkHostname refuses a node name that drbdadm on this host would not take
// for itself: the agent renders `on <node name>` for the local replica
// (drbdconf.go), and drbdadm would fail every command with "not defined in
// your config (for this host)".
func checkHostname(nodeName, hostname string) error {
	if drbdHostnamesEqual(nodeName, hostname) {
		return nil
	}
	return fmt.Errorf("--node-name %q differs from the host name %q that drbdadm matches `on` sections by (uname -n, or $%s when set): "+
		"every drbdadm command would fail with \"not defined in your config (for this host)\"; "+
		"run the agent with --node-name equal to uname -n (the DaemonSet sets it from spec.nodeName, so make the Kubernetes node name "+
		"equal to the hostname, or its short name) or set the node's hostname to the node name", nodeName, hostname, DrbdNodeEnv)
}
