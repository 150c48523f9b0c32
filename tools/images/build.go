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

// builtImage is an image ready to be written or pushed.
type builtImage struct {
	Spec   imageSpec
	Image  v1.Image
	Digest v1.Hash
	// Size is the compressed size of the image's layers.
	Size int64
}

// binDir is where each image's binary lives; the entrypoint is binDir/<name>.
const binDir = "usr/local/bin"

func buildImage(o options, s imageSpec) (builtImage, error) {
	bin, err := goBuild(o, s.Name)
	if err != nil {
		return builtImage{}, err
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
			return builtImage{}, err
		}
		base.file(f, 0o644, data)
	}
	if s.Debian {
		pkgs, err := addDebianPackages(base, filepath.Join(o.Root, "images", s.Name, "packages.txt"))
		if err != nil {
			return builtImage{}, err
		}
		labels["io.siterecovery.debian-packages"] = strings.Join(pkgs, " ")
	}
	app := newTree(o.Epoch)
	data, err := os.ReadFile(bin)
	if err != nil {
		return builtImage{}, err
	}
	app.file(binDir+"/"+s.Name, 0o755, data)

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
			return builtImage{}, err
		}
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: types.OCILayer,
			History: v1.History{CreatedBy: "tools/images: " + t.by, Created: created}})
	}
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return builtImage{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return builtImage{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", o.Arch, created
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + binDir + "/" + s.Name},
		User:       s.User,
		Env:        []string{"PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		WorkingDir: "/",
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return builtImage{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return builtImage{}, err
	}
	m, err := img.Manifest()
	if err != nil {
		return builtImage{}, err
	}
	var size int64
	for _, l := range m.Layers {
		size += l.Size
	}
	return builtImage{Spec: s, Image: img, Digest: d, Size: size}, nil
}

// goBuild builds cmd/<name> as a static, reproducible linux binary.
func goBuild(o options, name string) (string, error) {
	dir, err := os.MkdirTemp("", "images-"+name+"-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, "./cmd/"+name)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.Arch, "GOFLAGS=-buildvcs=false")
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
