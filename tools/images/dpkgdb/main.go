// Command dpkgdb reads the dpkg database of an unpacked image root filesystem
// as vulnerability scanners do (Trivy, Grype and Syft read both layouts:
// var/lib/dpkg/status, and distroless's var/lib/dpkg/status.d/<package>) and
// prints, as JSON, each package it lists: name, version, architecture, status,
// and the dependencies no listed package satisfies. test/images runs it on the
// images make images builds. It parses the database with pault.ag/go/debian's
// deb822 decoder and compares versions by Debian's rules (deb-version(7)), so
// that what it reports is what a Debian-aware reader sees, not what the
// builder meant to write.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"pault.ag/go/debian/control"
	"pault.ag/go/debian/dependency"
	"pault.ag/go/debian/version"
)

// entry is one package paragraph of the database.
type entry struct {
	control.Paragraph

	Package      string
	Status       string
	Version      version.Version
	Architecture dependency.Arch
	Depends      dependency.Dependency
	PreDepends   dependency.Dependency `control:"Pre-Depends"`
}

// Package is one package as the output lists it.
type Package struct {
	Name, Version, Architecture, Status, File string
	// Unsatisfied are the package's Depends and Pre-Depends relations no
	// listed package satisfies.
	Unsatisfied []string
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dpkgdb ROOT")
		os.Exit(2)
	}
	pkgs, err := read(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "dpkgdb:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(pkgs); err != nil {
		fmt.Fprintln(os.Stderr, "dpkgdb:", err)
		os.Exit(1)
	}
}

func read(root string) ([]Package, error) {
	files, err := filepath.Glob(filepath.Join(root, "var/lib/dpkg/status.d/*"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/dpkg/status")); err == nil {
		files = append(files, filepath.Join(root, "var/lib/dpkg/status"))
	}
	var entries []entry
	var from []string
	for _, f := range files {
		// status.d may also hold each package's .md5sums; they are not paragraphs.
		if strings.HasSuffix(f, ".md5sums") {
			continue
		}
		r, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		var es []entry
		err = control.Unmarshal(&es, r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for range es {
			from = append(from, strings.TrimPrefix(f, root))
		}
		entries = append(entries, es...)
	}
	out := make([]Package, 0, len(entries))
	for i, e := range entries {
		p := Package{Name: e.Package, Version: e.Version.String(), Architecture: e.Architecture.String(), Status: e.Status, File: from[i]}
		for _, rel := range slices.Concat(e.PreDepends.Relations, e.Depends.Relations) {
			if !satisfied(rel, entries) {
				p.Unsatisfied = append(p.Unsatisfied, relationString(rel))
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// satisfied reports whether one alternative of rel names a listed package of
// a version it accepts.
func satisfied(rel dependency.Relation, entries []entry) bool {
	for _, p := range rel.Possibilities {
		for _, e := range entries {
			if e.Package == p.Name && (p.Version == nil || p.Version.SatisfiedBy(e.Version)) {
				return true
			}
		}
	}
	return false
}

func relationString(rel dependency.Relation) string {
	var alts []string
	for _, p := range rel.Possibilities {
		s := p.Name
		if p.Version != nil {
			s += " (" + p.Version.Operator + " " + p.Version.Number + ")"
		}
		alts = append(alts, s)
	}
	return strings.Join(alts, " | ")
}
