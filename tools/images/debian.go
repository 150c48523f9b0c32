package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// mergedUsr maps the top-level folders Debian packages still ship into /usr, as
// Debian's merged-/usr layout does, and leaves symlinks in their place.
var mergedUsr = map[string]string{"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}

// dropped are folders of a package the image does not need.
var dropped = []string{"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale",
	"usr/share/lintian", "etc/init.d", "usr/lib/systemd", "lib/systemd"}

// debPackage is a Debian package unpacked into an image.
type debPackage struct {
	lockEntry
	// Control is the package's control paragraph, as dpkg records it.
	Control string
}

// statusDir is where the image's dpkg database lists each package in a file of
// its own, the layout of distroless images that Trivy, Grype and Syft read
// (var/lib/dpkg/status.d/<package>): the image has no dpkg to keep a status file.
const statusDir = "var/lib/dpkg/status.d"

// addDebianPackages downloads the packages listFile names for arch, at the
// versions and digests its lock file pins, unpacks their files into t and
// records each in the image's dpkg database.
func addDebianPackages(t *tree, listFile, arch string) ([]debPackage, error) {
	names, err := readList(listFile)
	if err != nil {
		return nil, err
	}
	pins, err := readLock(lockFile(listFile), arch, names)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "images-debs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	aptOpts, err := aptFor(arch)
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, aptOpts...), "download", "-q")
	for _, p := range pins {
		args = append(args, p.Name+"="+p.Version)
	}
	cmd := exec.Command("apt-get", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("apt-get download of the pinned versions (run apt-get update first; when Debian no longer serves one, make images-lock pins its successor): %w", err)
	}
	for from, to := range mergedUsr {
		t.symlink(from, to)
	}
	var pkgs []debPackage
	for _, p := range pins {
		debs, err := filepath.Glob(filepath.Join(dir, p.Name+"_*.deb"))
		if err != nil || len(debs) != 1 {
			return nil, fmt.Errorf("apt-get download left %d files for %s", len(debs), p.Name)
		}
		data, err := os.ReadFile(debs[0])
		if err != nil {
			return nil, err
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(data)); got != p.SHA256 {
			return nil, fmt.Errorf("%s %s for %s has sha256:%s, the lock pins sha256:%s", p.Name, p.Version, arch, got, p.SHA256)
		}
		control, err := exec.Command("dpkg-deb", "--field", debs[0]).Output()
		if err != nil {
			return nil, fmt.Errorf("dpkg-deb --field %s: %w", debs[0], err)
		}
		if err := unpackDeb(t, debs[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", debs[0], err)
		}
		pkg := debPackage{lockEntry: p, Control: string(control)}
		t.file(statusDir+"/"+p.Name, 0o644, []byte(statusEntry(pkg.Control)))
		pkgs = append(pkgs, pkg)
	}
	return pkgs, nil
}

// statusEntry is a package's control paragraph as dpkg's status database holds
// it: with the Status field that says it is installed, after Package.
func statusEntry(control string) string {
	control = strings.TrimRight(control, "\n") + "\n"
	first, rest, _ := strings.Cut(control, "\n")
	return first + "\nStatus: install ok installed\n" + rest
}

func readList(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" && !strings.HasPrefix(l, "#") {
			names = append(names, l)
		}
	}
	return names, s.Err()
}

// unpackDeb adds the files of a .deb's data archive to t.
func unpackDeb(t *tree, deb string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("dpkg-deb", "--fsys-tarfile", deb)
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	r := tar.NewReader(out)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name, ok := imagePath(h.Name)
		if !ok {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if _, isLink := mergedUsr[name]; !isLink {
				t.dir(name, h.Mode)
			}
		case tar.TypeReg:
			data, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			t.file(name, h.Mode, data)
		case tar.TypeSymlink:
			t.symlink(name, h.Linkname)
		case tar.TypeLink:
			target, ok := imagePath(h.Linkname)
			if !ok {
				continue
			}
			t.add(&tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target, Mode: h.Mode}, nil)
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("dpkg-deb --fsys-tarfile: %w: %s", err, stderr.String())
	}
	return nil
}

// imagePath maps a path of a package's data archive to the image's merged-/usr
// layout; ok is false for what the image leaves out.
func imagePath(name string) (string, bool) {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	if name == "" {
		return "", false
	}
	top, rest, _ := strings.Cut(name, "/")
	if to, ok := mergedUsr[top]; ok {
		name = strings.TrimSuffix(to+"/"+rest, "/")
	}
	for _, d := range dropped {
		if name == d || strings.HasPrefix(name, d+"/") {
			return "", false
		}
	}
	return name, true
}

// aptFor returns the apt-get options that make it see the packages of arch. For
// the machine's own architecture that is the system's package lists. For another
// one it is a private list of that architecture only, fetched once per run from the
// same Debian sources into a cache folder, so the machine's dpkg and apt
// configuration stay untouched (no dpkg --add-architecture).
func aptFor(arch string) ([]string, error) {
	native, err := exec.Command("dpkg", "--print-architecture").Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg --print-architecture: %w", err)
	}
	if strings.TrimSpace(string(native)) == arch {
		return nil, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, err
	}
	state := filepath.Join(cache, "siterecovery", "apt-"+arch)
	for _, d := range []string{"lists/partial", "archives/partial"} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o755); err != nil {
			return nil, err
		}
	}
	opts := []string{"-o", "APT::Architecture=" + arch, "-o", "APT::Architectures=" + arch,
		"-o", "Dir::State::Lists=" + filepath.Join(state, "lists"), "-o", "Dir::Cache=" + state,
		"-o", "Dir::Cache::archives=" + filepath.Join(state, "archives"), "-o", "Dir::State::status=/dev/null"}
	if !updatedArches[arch] {
		cmd := exec.Command("apt-get", append(opts, "update", "-q")...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("apt-get update for %s: %w", arch, err)
		}
		updatedArches[arch] = true
	}
	return opts, nil
}

// updatedArches are the foreign architectures whose lists this run has fetched.
var updatedArches = map[string]bool{}
