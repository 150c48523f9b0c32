// Command krew-manifest builds the release archives of kubectl-siterecovery
// for every platform into -out and writes the krew manifest with their
// sha256 sums (make krew-manifest VERSION=v0.1.0). It builds the tree of a
// commit (-ref, HEAD by default) exported with git archive, never the work
// tree: the sums are then those of a commit anyone can rebuild.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/siterecovery/siterecovery/internal/cli/krew"
)

func main() {
	root := flag.String("root", ".", "the repository")
	ref := flag.String("ref", "HEAD", "the commit to build")
	version := flag.String("version", "", "the release's version, v<semver>")
	out := flag.String("out", "bin/krew", "directory for the archives")
	manifest := flag.String("manifest", "plugins/siterecovery.yaml", "the manifest to write")
	flag.Parse()
	if err := run(context.Background(), *root, *ref, *version, *out, *manifest); err != nil {
		fmt.Fprintln(os.Stderr, "krew-manifest:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, ref, version, out, manifest string) error {
	if !strings.HasPrefix(version, "v") || strings.Count(version, ".") < 2 {
		return fmt.Errorf("-version %q: give the release's version as v<major>.<minor>.<patch>", version)
	}
	src, err := os.MkdirTemp("", "krew-src-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	commit, err := krew.Export(ctx, root, ref, src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var archives []krew.Archive
	for _, p := range krew.Platforms {
		a, err := krew.Build(ctx, src, out, version, commit, p)
		if err != nil {
			return err
		}
		fmt.Printf("%s  %s\n", a.SHA256, a.Path)
		archives = append(archives, a)
	}
	m, err := krew.Manifest(version, commit, archives)
	if err != nil {
		return err
	}
	return os.WriteFile(manifest, m, 0o644)
}
