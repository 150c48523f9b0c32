package images

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ociImage is one image of an OCI image layout: its manifest digest, config and
// the paths of its layer blobs.
type ociImage struct {
	Digest string
	Config struct {
		OS, Architecture string
		Config           struct {
			Entrypoint []string
			User       string
			Env        []string
			Labels     map[string]string
		}
	}
	Layers []string
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
}

// readLayout returns the images of the layout at dir by their ref.name annotation.
func readLayout(dir string) (map[string]ociImage, error) {
	var index struct{ Manifests []descriptor }
	if err := readJSON(filepath.Join(dir, "index.json"), &index); err != nil {
		return nil, err
	}
	blob := func(digest string) string {
		return filepath.Join(dir, "blobs", strings.Replace(digest, ":", "/", 1))
	}
	images := map[string]ociImage{}
	for _, m := range index.Manifests {
		var manifest struct {
			Config descriptor
			Layers []descriptor
		}
		if err := readJSON(blob(m.Digest), &manifest); err != nil {
			return nil, err
		}
		img := ociImage{Digest: m.Digest}
		if err := readJSON(blob(manifest.Config.Digest), &img.Config); err != nil {
			return nil, err
		}
		for _, l := range manifest.Layers {
			img.Layers = append(img.Layers, blob(l.Digest))
		}
		images[m.Annotations["org.opencontainers.image.ref.name"]] = img
	}
	return images, nil
}

func readJSON(file string, v any) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// unpack writes the image's layers, in order, into dir (whiteouts are not
// handled: the builder writes none).
func unpack(img ociImage, dir string) error {
	for _, l := range img.Layers {
		if err := unpackLayer(l, dir); err != nil {
			return fmt.Errorf("%s: %w", l, err)
		}
	}
	return nil
}

func unpackLayer(blob, dir string) error {
	f, err := os.Open(blob)
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	r := tar.NewReader(z)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(target, dir+string(filepath.Separator)) {
			return fmt.Errorf("entry %q leaves the root", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			var out *os.File
			if out, err = os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777); err == nil {
				_, err = io.Copy(out, r)
				err = errors.Join(err, out.Close())
			}
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, target)
		case tar.TypeLink:
			err = os.Link(filepath.Join(dir, filepath.FromSlash(h.Linkname)), target)
		}
		if err != nil {
			return err
		}
	}
}
