package drbd

import (
	"context"
	"strconv"
)

// Adm wraps drbdadm/drbdsetup invocations for one configuration file.
type Adm struct {
	Exec          Executor
	DrbdadmPath   string // default "drbdadm"
	DrbdsetupPath string // default "drbdsetup"
	// ConfigFile is passed as `drbdadm -c`, so the agent can keep its own
	// top-level file (e.g. one that includes its *.res directory).
	ConfigFile string
}

func (a *Adm) exec() Executor {
	if a.Exec == nil {
		return OSExecutor{}
	}
	return a.Exec
}

func (a *Adm) adm(ctx context.Context, args ...string) error {
	bin := a.DrbdadmPath
	if bin == "" {
		bin = "drbdadm"
	}
	if a.ConfigFile != "" {
		args = append([]string{"-c", a.ConfigFile}, args...)
	}
	_, err := a.exec().Run(ctx, bin, args...)
	return err
}

func (a *Adm) setupPath() string {
	if a.DrbdsetupPath == "" {
		return "drbdsetup"
	}
	return a.DrbdsetupPath
}

// CreateMD initialises internal metadata. It passes --force because it
// runs non-interactively and would otherwise block on drbdmeta's
// "overwrite?" prompt; that also means it destroys existing metadata,
// so the caller must only call it the first time a volume is set up.
// maxPeers <= 0 leaves drbd's default.
func (a *Adm) CreateMD(ctx context.Context, res string, maxPeers int) error {
	args := []string{"create-md", "--force"}
	if maxPeers > 0 {
		args = append(args, "--max-peers="+strconv.Itoa(maxPeers))
	}
	return a.adm(ctx, append(args, res)...)
}

// Adjust makes the kernel state match the config (idempotent; also
// brings a down resource up).
func (a *Adm) Adjust(ctx context.Context, res string) error { return a.adm(ctx, "adjust", res) }

// Up attaches, configures and connects the resource.
func (a *Adm) Up(ctx context.Context, res string) error { return a.adm(ctx, "up", res) }

// Primary promotes the resource. force overrides drbd's "need UpToDate
// data / quorum" checks and is how a DR site takes over.
func (a *Adm) Primary(ctx context.Context, res string, force bool) error {
	if force {
		return a.adm(ctx, "primary", "--force", res)
	}
	return a.adm(ctx, "primary", res)
}

// Secondary demotes the resource.
func (a *Adm) Secondary(ctx context.Context, res string) error { return a.adm(ctx, "secondary", res) }

// Connect connects the resource's connections that are StandAlone: DRBD
// leaves a connection StandAlone after a split brain it did not resolve, or
// after `disconnect`, and never retries it by itself.
func (a *Adm) Connect(ctx context.Context, res string) error { return a.adm(ctx, "connect", res) }

// Down disconnects, detaches and removes the resource from the kernel.
func (a *Adm) Down(ctx context.Context, res string) error { return a.adm(ctx, "down", res) }

// StatusJSON runs `drbdsetup status --json --statistics [res]`.
func (a *Adm) StatusJSON(ctx context.Context, res string) ([]byte, error) {
	args := []string{"status", "--json", "--statistics"}
	if res != "" {
		args = append(args, res)
	}
	return a.exec().Run(ctx, a.setupPath(), args...)
}

// Status runs StatusJSON and converts the result into the shared model.
func (a *Adm) Status(ctx context.Context, res string) ([]ResourceStatus, error) {
	out, err := a.StatusJSON(ctx, res)
	if err != nil {
		return nil, err
	}
	return StatusFromJSON(out)
}
