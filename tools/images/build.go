package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// builtImage is an image's index, one manifest per platform, ready to be written or pushed.
type builtImage struct {
	Spec      imageSpec
	Index     v1.ImageIndex
	Digest    v1.Hash
	Platforms []builtPlatform
}

// builtPlatform is the image of one platform.
type builtPlatform struct {
	Arch   string
	Digest v1.Hash
	// Size is the compressed size of the image's layers.
	Size int64
}

// buildIndex builds s for each of o.Arches into one OCI image index.
func buildIndex(o options, s imageSpec) (builtImage, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	b := builtImage{Spec: s}
	for _, arch := range o.Arches {
		img, p, err := buildImage(o, s, arch)
		if err != nil {
			return builtImage{}, fmt.Errorf("linux/%s: %w", arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
		b.Platforms = append(b.Platforms, p)
	}
	d, err := idx.Digest()
	if err != nil {
		return builtImage{}, err
	}
	b.Index, b.Digest = idx, d
	return b, nil
}

// binDir is where each image's binary lives; the entrypoint is binDir/<name>.
const binDir = "usr/local/bin"

func buildImage(o options, s imageSpec, arch string) (v1.Image, builtPlatform, error) {
	bin, err := goBuild(o, s.Name, arch)
	if err != nil {
		return nil, builtPlatform{}, err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":    s.Name,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.source":   o.Source,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.created":  time.Unix(o.Epoch, 0).UTC().Format(time.RFC3339),
	}

	base := newTree(o.Epoch)
	for _, f := range []string{"etc/passwd", "etc/group"} {
		data, err := os.ReadFile(filepath.Join(o.Root, "images/base", f))
		if err != nil {
			return nil, builtPlatform{}, err
		}
		base.file(f, 0o644, data)
	}
	var debs []debPackage
	distro := ""
	if s.Debian {
		debs, err = addDebianPackages(base, filepath.Join(o.Root, "images", s.Name, "packages.txt"), arch)
		if err != nil {
			return nil, builtPlatform{}, err
		}
		var versions []string
		for _, d := range debs {
			versions = append(versions, d.Name+"="+d.Version)
		}
		labels["io.siterecovery.debian-packages"] = strings.Join(versions, " ")
		distro = debianDistro(base)
	}
	app := newTree(o.Epoch)
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, builtPlatform{}, err
	}
	app.file(binDir+"/"+s.Name, 0o755, data)
	doc, err := sbom(o, s, arch, bin, data, debs, distro)
	if err != nil {
		return nil, builtPlatform{}, err
	}
	app.file(sbomDir+"/"+s.Name+".spdx.json", 0o644, doc)

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: time.Unix(o.Epoch, 0).UTC()}
	var adds []mutate.Addendum
	for _, t := range []struct {
		tree *tree
		by   string
	}{{base, "root filesystem"}, {app, s.Name + " binary"}} {
		l, err := t.tree.layer()
		if err != nil {
			return nil, builtPlatform{}, err
		}
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: types.OCILayer,
			History: v1.History{CreatedBy: "tools/images: " + t.by, Created: created}})
	}
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, builtPlatform{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, builtPlatform{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, created
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + binDir + "/" + s.Name},
		User:       s.User,
		Env:        []string{"PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		WorkingDir: "/",
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, builtPlatform{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, builtPlatform{}, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, builtPlatform{}, err
	}
	var size int64
	for _, l := range m.Layers {
		size += l.Size
	}
	return img, builtPlatform{Arch: arch, Digest: d, Size: size}, nil
}

// goBuild builds cmd/<name> as a static, reproducible linux binary.
func goBuild(o options, name, arch string) (string, error) {
	dir, err := os.MkdirTemp("", "images-"+name+"-"+arch+"-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, "./cmd/"+name)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=-buildvcs=false")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s: %w", name, err)
	}
	return out, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
