package sim

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// Env is the simulated node's environment.
type Env struct {
	StateDir string // DRBDSIM_STATE_DIR
	Node     string // DRBDSIM_NODE: this node's hostname
	// UtilsVersion and KernelVersion are the simulated drbd-utils and DRBD
	// module ("9.26.0"; DRBDSIM_UTILS_VERSION, DRBDSIM_KERNEL_VERSION); unset:
	// the defaults of tls.go.
	UtilsVersion, KernelVersion string
	// Stop ends a long-running `events2` when closed. nil means the process's
	// SIGTERM/SIGINT, as for the real command.
	Stop <-chan struct{}
}

// Main dispatches on the program name (drbdadm or drbdsetup) and returns
// the process exit code.
func Main(argv []string, env Env, stdout, stderr io.Writer) int {
	if len(argv) == 0 {
		return 20
	}
	var err error
	switch filepath.Base(argv[0]) {
	case "drbdadm":
		err = Drbdadm(argv[1:], env, stdout)
	case "drbdsetup":
		err = Drbdsetup(argv[1:], env, stdout)
	default:
		err = fail(20, "drbdsim: invoke as drbdadm or drbdsetup, not %q", argv[0])
	}
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, err)
	var ce *cmdError
	if errors.As(err, &ce) {
		return ce.code
	}
	return 20
}
