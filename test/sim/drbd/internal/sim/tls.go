package sim

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Simulated DRBD versions. A node runs drbd-utils UtilsVersion and the DRBD
// kernel module KernelVersion; unset, the utilities are Debian's 9.22.0
// (the drbd-node-agent image's package) and the module 9.2.12.
const (
	defaultUtilsVersion  = "9.22.0"
	defaultKernelVersion = "9.2.12"
)

// First versions with TLS on the replication link: drbd-utils 9.26.0
// (LINBIT/drbd-utils ChangeLog "drbdsetup,v9: support for TLS/kTLS";
// user/v9/config_flags.c lists the "tls" net option) and the drbd-9.2.6
// kernel module (LINBIT/drbd "drbd_transport_tcp: add kTLS support").
var (
	tlsUtils  = [3]int{9, 26, 0}
	tlsKernel = [3]int{9, 2, 6}
)

// parseVersion reads "9.26.0"; a bad string is version 0.
func parseVersion(s string) [3]int {
	var v [3]int
	for i, part := range strings.SplitN(s, ".", 3) {
		v[i], _ = strconv.Atoi(part)
	}
	return v
}

func atLeast(v, least [3]int) bool {
	for i := range v {
		if v[i] != least[i] {
			return v[i] > least[i]
		}
	}
	return true
}

func (e Env) utils() [3]int {
	if e.UtilsVersion == "" {
		return parseVersion(defaultUtilsVersion)
	}
	return parseVersion(e.UtilsVersion)
}

func (e Env) kernel() [3]int {
	if e.KernelVersion == "" {
		return parseVersion(defaultKernelVersion)
	}
	return parseVersion(e.KernelVersion)
}

func versionCode(v [3]int) string { return fmt.Sprintf("0x%02x%02x%02x", v[0], v[1], v[2]) }

// printVersion is `drbdadm --version`: shell variables with the module's and
// the utilities' versions (drbd-utils user/v9/drbdadm_main.c, option 'V').
func printVersion(env Env, stdout io.Writer) error {
	u, k := env.utils(), env.kernel()
	_, err := fmt.Fprintf(stdout, "DRBDADM_BUILDTAG=drbdsim\nDRBDADM_API_VERSION=2\nDRBD_KERNEL_VERSION_CODE=%s\nDRBD_KERNEL_VERSION=%d.%d.%d\nDRBDADM_VERSION_CODE=%s\nDRBDADM_VERSION=%d.%d.%d\n",
		versionCode(k), k[0], k[1], k[2], versionCode(u), u[0], u[1], u[2])
	return err
}

// printNewPeerHelp is the part of `drbdsetup help new-peer` that tells the
// net options this drbdsetup knows: drbdsetup prints one usage entry per
// option of its table, so "[--tls={yes|no}]" appears only from 9.26.0 on
// (drbd-utils user/v9/config_flags.c, net options).
func printNewPeerHelp(env Env, stdout io.Writer) error {
	opts := "[--protocol={A|B|C}] [--cram-hmac-alg=<str>] [--shared-secret=<str>] [--allow-remote-read={yes|no}]"
	if atLeast(env.utils(), tlsUtils) {
		opts += " [--tls={yes|no}] [--tls-keyring=<key-description>] [--tls-privkey=<key-description>] [--tls-certificate=<key-description>]"
	}
	_, err := fmt.Fprintf(stdout, "drbdsetup new-peer - Make a peer host known to a resource.\n\nUSAGE: drbdsetup new-peer {resource} {peer_node_id}\n    %s\n", opts)
	return err
}

// refuseTLS is how the node's DRBD answers a resource file with "tls yes":
// drbdadm before 9.26.0 does not know the option and stops at parsing the
// file, before any drbdsetup call (the text of Debian's drbdadm 9.22.0 less
// its file:line prefix; internal/drbd's TestTLSWithRealDrbdUtils sees the
// real one); newer utilities send it to the module, and one older than
// drbd-9.2.6 has no TLS attribute in its net options and fails the
// new-peer call of up or adjust (create-md sends no net options) (the simulator's wording: no real text was at hand).
func refuseTLS(env Env, rc *ResConfig, cmd string) error {
	if rc.TLS == "" {
		return nil
	}
	if !atLeast(env.utils(), tlsUtils) {
		return fail(10, "%s: Parse error: 'an option keyword' expected,\n\tbut got 'tls'", rc.Name)
	}
	if k := env.kernel(); !atLeast(k, tlsKernel) && (cmd == "up" || cmd == "adjust") {
		return fail(10, "%s: Failure: DRBD kernel module %d.%d.%d does not know the tls net option\nCommand 'drbdsetup new-peer %s --tls=%s' terminated with exit code 10", rc.Name, k[0], k[1], k[2], rc.Name, rc.TLS)
	}
	return nil
}
