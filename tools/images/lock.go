package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// lockEntry pins one Debian package of one architecture: the version the
// image holds and the SHA256 of its .deb, as the Debian archive's Packages
// index lists it. The build downloads that version and refuses a file of any
// other digest, so an image is rebuilt from the same bytes or not at all.
type lockEntry struct {
	Arch, Name, Version, SHA256 string
}

// lockFile is where packages.txt's pins live, beside it.
func lockFile(listFile string) string {
	return strings.TrimSuffix(listFile, ".txt") + ".lock"
}

const lockHeader = `# The Debian packages of packages.txt pinned by version and .deb digest, per
# architecture: <arch> <package> <version> sha256:<digest>. make images fetches
# exactly these and refuses other bytes. make images-lock writes this file
# from the package lists of the machine (apt-get update first) for every
# architecture of PLATFORMS; commit it, and re-run it to take Debian's updates.
`

// readLock returns the pins of arch for names, in names' order; it fails,
// saying how to fix it, when one is missing.
func readLock(file, arch string, names []string) ([]lockEntry, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%w (run make images-lock)", err)
	}
	defer f.Close()
	byName := map[string]lockEntry{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		l := strings.TrimSpace(s.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fields := strings.Fields(l)
		digest, ok := strings.CutPrefix(fields[len(fields)-1], "sha256:")
		if len(fields) != 4 || !ok || len(digest) != 64 {
			return nil, fmt.Errorf("%s: %q is not <arch> <package> <version> sha256:<digest>", file, l)
		}
		if fields[0] == arch {
			byName[fields[1]] = lockEntry{Arch: fields[0], Name: fields[1], Version: fields[2], SHA256: digest}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	pins := make([]lockEntry, 0, len(names))
	for _, n := range names {
		e, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("%s pins no %s for %s: run make images-lock PLATFORMS=linux/%s and commit it", file, n, arch, arch)
		}
		pins = append(pins, e)
	}
	return pins, nil
}

// writeLock pins the candidate version of each package of listFile for each
// arch, with the digest apt's package lists give for it.
func writeLock(listFile string, arches []string) error {
	names, err := readList(listFile)
	if err != nil {
		return err
	}
	var lines []string
	for _, arch := range arches {
		aptOpts, err := aptFor(arch)
		if err != nil {
			return err
		}
		for _, n := range names {
			e, err := candidate(aptOpts, arch, n)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%s %s %s sha256:%s", e.Arch, e.Name, e.Version, e.SHA256))
		}
	}
	sort.Strings(lines)
	out := lockFile(listFile)
	if err := os.WriteFile(out, []byte(lockHeader+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", filepath.Base(out))
	return nil
}

// candidate returns the version apt would install of name for arch and its
// .deb's SHA256.
func candidate(aptOpts []string, arch, name string) (lockEntry, error) {
	out, err := exec.Command("apt-cache", append(append([]string{}, aptOpts...), "show", "--no-all-versions", name)...).Output()
	if err != nil {
		return lockEntry{}, fmt.Errorf("apt-cache show %s for %s (run apt-get update first): %w", name, arch, err)
	}
	fields := controlFields(string(out))
	e := lockEntry{Arch: arch, Name: name, Version: fields["Version"], SHA256: fields["SHA256"]}
	if e.Version == "" || len(e.SHA256) != 64 {
		return lockEntry{}, fmt.Errorf("apt-cache show %s for %s gives no version and SHA256", name, arch)
	}
	return e, nil
}

// controlFields returns the single-line fields of the first paragraph of a
// Debian control text (deb822).
func controlFields(text string) map[string]string {
	fields := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" {
			break
		}
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}
