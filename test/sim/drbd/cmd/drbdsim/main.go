// Command drbdsim stands in for drbdadm and drbdsetup in tests: it acts
// as whichever its argv[0] basename names. State lives in
// $DRBDSIM_STATE_DIR and the simulated host is $DRBDSIM_NODE.
package main

import (
	"os"

	"github.com/siterecovery/siterecovery/test/sim/drbd/internal/sim"
)

func main() {
	env := sim.Env{StateDir: os.Getenv("DRBDSIM_STATE_DIR"), Node: os.Getenv("DRBDSIM_NODE"),
		UtilsVersion: os.Getenv("DRBDSIM_UTILS_VERSION"), KernelVersion: os.Getenv("DRBDSIM_KERNEL_VERSION")}
	os.Exit(sim.Main(os.Args, env, os.Stdout, os.Stderr))
}
