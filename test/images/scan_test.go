package images

import (
	"bufio"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dpkgPackage is one package of an image's dpkg database as
// tools/images/dpkgdb reads it.
type dpkgPackage struct {
	Name, Version, Architecture, Status, File string
	Unsatisfied                               []string
}

// leftOut are dependencies packages.txt leaves out on purpose: they serve
// only maintainer and init scripts, which an image never runs.
var leftOut = []string{"lsb-base", "init-system-helpers", "awk"}

// checkDpkgDatabase reads the agent image's dpkg database as a scanner does and
// checks that it lists every package of packages.txt as installed, drbd-utils at
// the version the image's label names, for arch; that the packages' own
// dependencies are met in it (but leftOut); and that /etc/os-release names the
// Debian release, which scanners need to match the packages to advisories.
func checkDpkgDatabase(t *testing.T, root, fs, label, arch string) []dpkgPackage {
	t.Helper()
	cmd := exec.Command("go", "run", "-C", filepath.Join(root, "tools/images"), "./dpkgdb", fs)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dpkgdb %s: %v", fs, err)
	}
	var pkgs []dpkgPackage
	if err := json.Unmarshal(out, &pkgs); err != nil {
		t.Fatal(err)
	}
	byName := map[string]dpkgPackage{}
	for _, p := range pkgs {
		byName[p.Name] = p
	}
	for _, name := range packageList(t, root) {
		p, ok := byName[name]
		if !ok {
			t.Errorf("the dpkg database lists no %s (it lists %d packages)", name, len(pkgs))
			continue
		}
		if p.Status != "install ok installed" || p.Architecture != arch && p.Architecture != "all" {
			t.Errorf("%s in %s: status %q, architecture %s; want installed, %s", name, p.File, p.Status, p.Architecture, arch)
		}
		for _, dep := range p.Unsatisfied {
			if !slices.ContainsFunc(leftOut, func(l string) bool { return strings.HasPrefix(dep, l+" ") || dep == l }) {
				t.Errorf("%s depends on %s, which the dpkg database does not satisfy", name, dep)
			}
		}
	}
	if want := "drbd-utils=" + byName["drbd-utils"].Version; !strings.Contains(" "+label+" ", " "+want+" ") {
		t.Errorf("the dpkg database lists %s, the image's label %q", want, label)
	}
	osRelease, err := os.ReadFile(filepath.Join(fs, "usr/lib/os-release"))
	if err != nil || !strings.Contains(string(osRelease), "ID=debian") {
		t.Errorf("/usr/lib/os-release does not name Debian: %v\n%s", err, osRelease)
	}
	if target, err := os.Readlink(filepath.Join(fs, "etc/os-release")); err != nil || target != "../usr/lib/os-release" {
		t.Errorf("/etc/os-release is not the link base-files makes: %q %v", target, err)
	}
	return pkgs
}

// spdx is what the test reads of an SPDX 2.3 JSON document.
type spdx struct {
	SPDXVersion string
	Packages    []struct {
		Name, VersionInfo string
		ExternalRefs      []struct{ ReferenceType, ReferenceLocator string }
	}
}

// checkSBOM checks that the image carries an SPDX SBOM at
// /usr/share/doc/sbom/<name>.spdx.json naming, by package URL, every Go module
// the image's binary embeds in its module list (read here from the binary with
// debug/buildinfo), the Go standard library, and each Debian package of debs.
func checkSBOM(t *testing.T, fs, name, bin string, debs []dpkgPackage) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fs, "usr/share/doc/sbom", name+".spdx.json"))
	if err != nil {
		t.Errorf("no SBOM: %v", err)
		return
	}
	var doc spdx
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the SBOM is not JSON: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" {
		t.Errorf("spdxVersion %q, want SPDX-2.3", doc.SPDXVersion)
	}
	purls := map[string]bool{}
	for _, p := range doc.Packages {
		for _, r := range p.ExternalRefs {
			if r.ReferenceType == "purl" {
				purls[strings.SplitN(r.ReferenceLocator, "?", 2)[0]] = true
			}
		}
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("the binary's module list: %v", err)
	}
	if info.Main.Path == "" {
		t.Fatalf("%s embeds no module list", bin)
	}
	want := []string{"pkg:golang/stdlib@" + strings.TrimPrefix(info.GoVersion, "go"), "pkg:golang/" + info.Main.Path + "@" + version}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		want = append(want, "pkg:golang/"+d.Path+"@"+d.Version)
	}
	for _, d := range debs {
		want = append(want, "pkg:deb/debian/"+d.Name+"@"+d.Version)
	}
	missing := 0
	for _, w := range want {
		if !purls[w] {
			missing++
			if missing <= 5 {
				t.Errorf("the SBOM does not name %s", w)
			}
		}
	}
	if missing > 0 {
		t.Errorf("the SBOM misses %d of the %d packages the image holds", missing, len(want))
	}
}

// packageList returns the package names of images/drbd-node-agent/packages.txt.
func packageList(t *testing.T, root string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "images/drbd-node-agent/packages.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" && !strings.HasPrefix(l, "#") {
			names = append(names, l)
		}
	}
	return names
}

// TestDebianPackagesPinnedByDigest checks that packages.lock pins every
// package of packages.txt for every platform the images are built for, by
// version and .deb digest, so that a build takes no package the lock does not
// name (tools/images refuses a download of another digest).
func TestDebianPackagesPinnedByDigest(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "images/drbd-node-agent/packages.lock"))
	if err != nil {
		t.Fatalf("%v (make images-lock writes it)", err)
	}
	pinned := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 4 || !strings.HasPrefix(f[3], "sha256:") || len(f[3]) != len("sha256:")+64 {
			t.Errorf("lock line %q is not <arch> <package> <version> sha256:<64 hex>", l)
			continue
		}
		pinned[f[0]+"/"+f[1]] = true
	}
	for _, p := range platforms {
		for _, n := range packageList(t, root) {
			if arch := strings.TrimPrefix(p, "linux/"); !pinned[arch+"/"+n] {
				t.Errorf("packages.lock pins no %s for %s: run make images-lock", n, arch)
			}
		}
	}
}

// TestOneBuildPath fails when a Dockerfile or Containerfile comes back: the
// images are built by tools/images only, so that what test/images checks is
// what users run.
func TestOneBuildPath(t *testing.T) {
	out, err := exec.Command("git", "-C", repoRoot(t), "ls-files").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(string(out), "\n") {
		if b := filepath.Base(f); b == "Dockerfile" || b == "Containerfile" || strings.HasSuffix(b, ".Dockerfile") {
			t.Errorf("%s is a second way to build an image: tools/images is the one", f)
		}
	}
}
