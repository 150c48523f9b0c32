// Command images builds the product's container images into one OCI image layout,
// and pushes them when -registry is set, without a container daemon. Each image is
// an OCI image index with one image per -platforms entry (default linux/amd64 and
// linux/arm64): the Go binaries are cross-compiled, and the agent's Debian packages
// are those of each architecture.
//
//   - quorum-manager, pg-controller, siterecovery-console and siterecovery-probe
//     (the test failover's network check): one static Go binary on an empty base
//     with /etc/passwd and /etc/group, running as 65532:65532;
//   - drbd-node-agent: the same on a root filesystem assembled from the Debian
//     packages in images/drbd-node-agent/packages.txt (drbd-utils and its
//     libraries), running as root because drbdsetup needs the kernel's netlink
//     interface in a privileged container.
//
// Every image carries an SPDX SBOM at /usr/share/doc/sbom/<name>.spdx.json: its
// binary's Go modules (from the binary's embedded module list) and its Debian
// packages. The agent's Debian packages are pinned by version and .deb digest in
// images/drbd-node-agent/packages.lock (written by -update-lock, make
// images-lock), and listed in a dpkg database scanners read
// (/var/lib/dpkg/status.d/<package>); base-files gives them the Debian release
// (/etc/os-release). The other images have no base image to pin: their only
// files are the binary, the SBOM and images/base/etc.
//
// Builds are reproducible: binaries are built with -trimpath and no build id, and
// every file in every layer carries the time -epoch, owner 0 and a sorted position.
// This is the only way the images are built: there are no Dockerfiles.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// imageSpec is one image: the binary cmd/<Name> and how it runs.
type imageSpec struct {
	Name string
	// User is the numeric uid:gid the image runs as.
	User string
	// Debian is true when the root filesystem comes from images/<Name>/packages.txt.
	Debian bool
}

var specs = []imageSpec{
	{Name: "quorum-manager", User: "65532:65532"},
	{Name: "pg-controller", User: "65532:65532"},
	{Name: "siterecovery-console", User: "65532:65532"},
	{Name: "siterecovery-probe", User: "65532:65532"},
	{Name: "drbd-node-agent", User: "0:0", Debian: true},
}

// options are the command's flags.
type options struct {
	Root, Out, Version, Revision, Source, Registry string
	// Arches are the GOARCH of each platform (linux/<arch>) every image is built for.
	Arches []string
	Epoch  int64
	Only   map[string]bool
}

func main() {
	var o options
	var only string
	flag.StringVar(&o.Root, "root", "../..", "the repository's root")
	flag.StringVar(&o.Out, "out", "../../bin/images", "the OCI image layout to write (replaced)")
	flag.StringVar(&o.Version, "version", "dev", "the images' tag and version label")
	flag.StringVar(&o.Revision, "revision", "", "the source revision label (a git commit)")
	flag.StringVar(&o.Source, "source", "https://github.com/siterecovery/siterecovery", "the source label")
	flag.StringVar(&o.Registry, "registry", "", "when set, push each image to <registry>/<name>:<version>")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms of each image's index (linux/<GOARCH>)")
	flag.StringVar(&only, "images", "", "comma-separated image names to build (default: all)")
	flag.Int64Var(&o.Epoch, "epoch", epochFromEnv(), "the time of every file and of the images, in seconds (default: $SOURCE_DATE_EPOCH or 0)")
	updateLock := flag.Bool("update-lock", false, "pin the candidate versions of each Debian image's packages.txt for -platforms into its packages.lock, and build nothing")
	flag.Parse()
	for _, p := range strings.Split(*platforms, ",") {
		arch, ok := strings.CutPrefix(strings.TrimSpace(p), "linux/")
		if !ok || arch == "" {
			fmt.Fprintf(os.Stderr, "images: -platforms: %q is not linux/<GOARCH>, e.g. linux/amd64\n", p)
			os.Exit(2)
		}
		o.Arches = append(o.Arches, arch)
	}
	if only != "" {
		o.Only = map[string]bool{}
		for _, n := range strings.Split(only, ",") {
			o.Only[strings.TrimSpace(n)] = true
		}
	}
	if *updateLock {
		for _, s := range specs {
			if s.Debian {
				if err := writeLock(filepath.Join(o.Root, "images", s.Name, "packages.txt"), o.Arches); err != nil {
					fmt.Fprintln(os.Stderr, "images:", err)
					os.Exit(1)
				}
			}
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func epochFromEnv() int64 {
	n, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func run(o options) error {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return err
	}
	o.Root = root
	var built []builtImage
	for _, s := range specs {
		if o.Only != nil && !o.Only[s.Name] {
			continue
		}
		b, err := buildIndex(o, s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		built = append(built, b)
	}
	if len(built) == 0 {
		return fmt.Errorf("no image matches -images")
	}
	if err := writeLayout(o, built); err != nil {
		return err
	}
	for _, b := range built {
		fmt.Printf("%s:%s@%s\n", b.Spec.Name, o.Version, b.Digest)
		for _, p := range b.Platforms {
			fmt.Printf("  linux/%s@%s\t%d bytes compressed\n", p.Arch, p.Digest, p.Size)
		}
	}
	if o.Registry != "" {
		return push(o, built)
	}
	return nil
}
