package main

import (
	"archive/tar"
	"bytes"
	"io"
	"path"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// tree is the content of one layer, written in path order with one time and
// owner so that equal trees give equal layer digests.
type tree struct {
	epoch   time.Time
	entries map[string]*tar.Header
	data    map[string][]byte
}

func newTree(epoch int64) *tree {
	return &tree{epoch: time.Unix(epoch, 0).UTC(), entries: map[string]*tar.Header{}, data: map[string][]byte{}}
}

func (t *tree) add(h *tar.Header, data []byte) {
	h.Name = path.Clean(h.Name)
	for d := path.Dir(h.Name); d != "." && d != "/"; d = path.Dir(d) {
		if _, ok := t.entries[d]; !ok {
			t.entries[d] = &tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}
		}
	}
	t.entries[h.Name] = h
	t.data[h.Name] = data
}

func (t *tree) file(name string, mode int64, data []byte) {
	t.add(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode}, data)
}

func (t *tree) symlink(name, target string) {
	t.add(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}, nil)
}

func (t *tree) dir(name string, mode int64) {
	t.add(&tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: mode}, nil)
}

// layer writes the tree as a gzip-compressed OCI layer.
func (t *tree) layer() (v1.Layer, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, name := range sortedKeys(t.entries) {
		h := *t.entries[name]
		h.ModTime, h.AccessTime, h.ChangeTime = t.epoch, time.Time{}, time.Time{}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.Size = int64(len(t.data[name]))
		h.Format = tar.FormatPAX
		h.PAXRecords = nil
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		if err := w.WriteHeader(&h); err != nil {
			return nil, err
		}
		if _, err := w.Write(t.data[name]); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
