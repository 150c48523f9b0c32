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

// addDebianPackages downloads the packages listFile names with apt-get download and
// unpacks their files into t; it returns "name=version" for each.
func addDebianPackages(t *tree, listFile string) ([]string, error) {
	names, err := readList(listFile)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "images-debs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("apt-get", append([]string{"download", "-q"}, names...)...)
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
