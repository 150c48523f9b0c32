package krew

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The checked-in manifest is what make krew-manifest writes: no placeholder
// sum, every release platform, the release's URLs, and a commit of this
// repository's history as its source.
func TestCheckedInManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "plugins", "siterecovery.yaml"))
	require.NoError(t, err)
	var got manifest
	require.NoError(t, yaml.Unmarshal(b, &got))
	hex := regexp.MustCompile(`^[0-9a-f]{64}$`)
	var archives []Archive
	require.Len(t, got.Spec.Platforms, len(Platforms))
	for i, pl := range got.Spec.Platforms {
		p := Platforms[i]
		assert.Equal(t, map[string]string{"os": p.OS, "arch": p.Arch}, pl.Selector.MatchLabels)
		assert.Regexp(t, hex, pl.SHA256)
		assert.NotEqual(t, strings.Repeat("0", 64), pl.SHA256, "a placeholder sum")
		archives = append(archives, Archive{Platform: p, Name: ArchiveName(p), SHA256: pl.SHA256})
	}
	commit := regexp.MustCompile(`(?m)^# commit ([0-9a-f]{40}):`).FindSubmatch(b)
	require.NotNil(t, commit, "the manifest names the commit it was built from")
	if _, err := exec.LookPath("git"); err == nil {
		if _, err := os.Stat(filepath.Join(repoRoot, ".git")); err == nil {
			out, err := exec.Command("git", "-C", repoRoot, "cat-file", "-t", string(commit[1])).CombinedOutput()
			require.NoError(t, err, "commit %s is not in this repository: %s", commit[1], out)
		}
	}
	want, err := Manifest(got.Spec.Version, string(commit[1]), archives)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(b), "the manifest is the generator's output, not edited by hand: make krew-manifest VERSION=%s", got.Spec.Version)
}
