package main

import (
	"archive/tar"
	"bufio"
	"bytes"
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

// addDebianPackages downloads the packages listFile names for arch with apt-get
// download and unpacks their files into t; it returns "name=version" for each.
func addDebianPackages(t *tree, listFile, arch string) ([]string, error) {
	names, err := readList(listFile)
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
	cmd := exec.Command("apt-get", append(append(aptOpts, "download", "-q"), names...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("apt-get download %s (run apt-get update first): %w", strings.Join(names, " "), err)
	}
	for from, to := range mergedUsr {
		t.symlink(from, to)
	}
	var versions []string
	for _, n := range names {
		debs, err := filepath.Glob(filepath.Join(dir, n+"_*.deb"))
		if err != nil || len(debs) != 1 {
			return nil, fmt.Errorf("apt-get download left %d files for %s", len(debs), n)
		}
		v, err := exec.Command("dpkg-deb", "--field", debs[0], "Version").Output()
		if err != nil {
			return nil, fmt.Errorf("dpkg-deb --field %s: %w", debs[0], err)
		}
		versions = append(versions, n+"="+strings.TrimSpace(string(v)))
		if err := unpackDeb(t, debs[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", debs[0], err)
		}
	}
	return versions, nil
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
