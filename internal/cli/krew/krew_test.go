package krew

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const repoRoot = "../../.."

// manifest is the part of a krew Plugin the tests read.
type manifest struct {
	Spec struct {
		Version   string `json:"version"`
		Platforms []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// A platform's archive, built as make krew-manifest builds it (the tree of
// HEAD), is rebuilt byte for byte, the manifest carries its real sha256, and
// the binary inside reports the version it was built as.
func TestArchiveSumInManifest(t *testing.T) {
	if testing.Short() {
		// Two builds of the CLI and three passes of gzip and sha256 over it:
		// under the unit tier's race detector the in-process compression
		// alone took minutes. The integration tier runs it.
		t.Skip("builds and compresses the CLI twice; run without -short")
	}
	p := Platform{OS: "linux", Arch: "amd64"}
	ctx := t.Context()
	src := t.TempDir()
	_, err := Export(ctx, repoRoot, "HEAD", src)
	require.NoError(t, err)
	a, err := Build(ctx, src, t.TempDir(), "v0.0.0-test", "0123456789abcdef", p)
	require.NoError(t, err)
	again, err := Build(ctx, src, t.TempDir(), "v0.0.0-test", "0123456789abcdef", p)
	require.NoError(t, err)
	assert.Equal(t, a.SHA256, again.SHA256, "the archive is reproducible")

	m, err := Manifest("v0.0.0-test", "0123456789abcdef", []Archive{a})
	require.NoError(t, err)
	var got manifest
	require.NoError(t, yaml.Unmarshal(m, &got))
	require.Len(t, got.Spec.Platforms, 1)
	pl := got.Spec.Platforms[0]
	sum, err := SHA256(a.Path)
	require.NoError(t, err)
	assert.Equal(t, sum, pl.SHA256, "the manifest's sum is the archive's")
	assert.Equal(t, map[string]string{"os": "linux", "arch": "amd64"}, pl.Selector.MatchLabels)
	assert.Equal(t, "https://github.com/siterecovery/siterecovery/releases/download/v0.0.0-test/kubectl-siterecovery_linux_amd64.tar.gz", pl.URI)
	assert.Equal(t, Binary, pl.Bin)

	bin := extract(t, a.Path)
	if runtime.GOOS != p.OS || runtime.GOARCH != p.Arch {
		return
	}
	out, err := exec.Command(bin, "version", "--client", "-o", "json").Output()
	require.NoError(t, err)
	var v struct {
		ClientVersion struct{ Version, Commit, Platform string } `json:"clientVersion"`
	}
	require.NoError(t, json.Unmarshal(out, &v))
	assert.Equal(t, "v0.0.0-test", v.ClientVersion.Version)
	assert.Equal(t, "0123456789abcdef", v.ClientVersion.Commit)
	assert.Equal(t, "linux/amd64", v.ClientVersion.Platform)
}

// extract unpacks the archive's only file, the plugin binary, and returns its path.
func extract(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	h, err := tr.Next()
	require.NoError(t, err)
	assert.Equal(t, Binary, h.Name)
	assert.Equal(t, int64(0o755), h.Mode)
	var body bytes.Buffer
	_, err = io.Copy(&body, tr)
	require.NoError(t, err)
	_, err = tr.Next()
	require.True(t, errors.Is(err, io.EOF), "one file in the archive")
	bin := filepath.Join(t.TempDir(), Binary)
	require.NoError(t, os.WriteFile(bin, body.Bytes(), 0o755))
	return bin
}
