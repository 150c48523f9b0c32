package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/siterecovery/siterecovery/internal/cli/gather"
	"github.com/siterecovery/siterecovery/internal/cli/validate"
	"github.com/siterecovery/siterecovery/internal/scheme"
)

func newGatherCommand(o *Options) *cobra.Command {
	var since time.Duration
	var dir string
	cmd := &cobra.Command{
		Use:   "gather",
		Short: "Write a support bundle (tar.gz) of the DR namespace, its clusters, events and logs",
		Long: `gather writes siterecovery-<namespace>-<time>.tar.gz into --dir with: the DR
namespace's objects on the quorum cluster; the group copies, DRBD resources,
VMs, PVCs, nodes and events of every workload cluster the CLI can reach; the
logs of quorum-manager, pg-controller and the DRBD agents where you may read
them; the status and validate reports; and a README listing what is inside
and what could not be gathered.

Secrets appear as names and key names only, and every credential the CLI saw
is replaced by [REDACTED], as is the VMs' cloud-init user and network data
(guest passwords, SSH keys, scripts) wherever it appears. It prints the
bundle's path.`,
		Example: `  kubectl siterecovery gather -n dr-production --since 2h --dir /tmp`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := o.gather(cmd.Context(), since, dir)
			if err != nil {
				return err
			}
			fmt.Fprintln(o.Out, path)
			return nil
		},
	}
	cmd.Flags().DurationVar(&since, "since", 24*time.Hour, "gather events and logs this far back; 0 for everything")
	cmd.Flags().StringVar(&dir, "dir", ".", "directory to write the bundle into")
	return cmd
}

func (o *Options) gather(ctx context.Context, since time.Duration, dir string) (string, error) {
	c, err := o.Quorum()
	if err != nil {
		return "", err
	}
	cfg, err := o.Flags.ToRESTConfig()
	if err != nil {
		return "", err
	}
	ns, _, err := o.Namespace()
	if err != nil {
		return "", err
	}
	reports := map[string][]byte{}
	if r, err := o.validate(ctx, validate.Scope{}); err == nil {
		var sb strings.Builder
		_ = r.Table(&sb)
		reports["validate.txt"] = []byte(sb.String())
	} else {
		reports["validate.txt"] = []byte("validate failed: " + err.Error() + "\n")
	}
	if st, err := o.status(ctx, "", false); err == nil {
		b, _ := json.MarshalIndent(st, "", "  ")
		reports["status.json"] = b
	}
	name := filepath.Join(dir, fmt.Sprintf("siterecovery-%s-%s.tar.gz", ns, time.Now().UTC().Format("20060102T150405Z")))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	err = gather.Write(ctx, f, gather.Input{Quorum: c, QuorumConfig: cfg, Scheme: scheme.New(), Namespace: ns, Since: since, Reports: reports})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}
