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

// ociIndex is one image of the layout: its index digest and the image of each
// platform ("linux/amd64") the index lists.
type ociIndex struct {
	Digest    string
	Platforms map[string]ociImage
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

const ociIndexType = "application/vnd.oci.image.index.v1+json"

// readLayout returns the image indexes of the layout at dir by their ref.name annotation.
func readLayout(dir string) (map[string]ociIndex, error) {
	var index struct{ Manifests []descriptor }
	if err := readJSON(filepath.Join(dir, "index.json"), &index); err != nil {
		return nil, err
	}
	blob := func(digest string) string {
		return filepath.Join(dir, "blobs", strings.Replace(digest, ":", "/", 1))
	}
	images := map[string]ociIndex{}
	for _, ref := range index.Manifests {
		if ref.MediaType != ociIndexType {
			return nil, fmt.Errorf("%s is a %s, want an image index", ref.Annotations["org.opencontainers.image.ref.name"], ref.MediaType)
		}
		var platforms struct{ Manifests []descriptor }
		if err := readJSON(blob(ref.Digest), &platforms); err != nil {
			return nil, err
		}
		idx := ociIndex{Digest: ref.Digest, Platforms: map[string]ociImage{}}
		for _, m := range platforms.Manifests {
			if m.Platform == nil {
				return nil, fmt.Errorf("index %s lists %s without a platform", ref.Digest, m.Digest)
			}
			img, err := readImage(blob, m.Digest)
			if err != nil {
				return nil, err
			}
			idx.Platforms[m.Platform.OS+"/"+m.Platform.Architecture] = img
		}
		images[ref.Annotations["org.opencontainers.image.ref.name"]] = idx
	}
	return images, nil
}

// readImage reads the image whose manifest is the blob digest.
func readImage(blob func(string) string, digest string) (ociImage, error) {
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	if err := readJSON(blob(digest), &manifest); err != nil {
		return ociImage{}, err
	}
	img := ociImage{Digest: digest}
	if err := readJSON(blob(manifest.Config.Digest), &img.Config); err != nil {
		return ociImage{}, err
	}
	for _, l := range manifest.Layers {
		img.Layers = append(img.Layers, blob(l.Digest))
	}
	return img, nil
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
