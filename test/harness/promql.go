package harness

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// ParsePromQL runs Prometheus's own PromQL parser (the tools/promql module,
// kept apart so that Prometheus does not weigh on the product's go.mod) over
// exprs, by name, and decodes its report of each into T.
func ParsePromQL[T any](t testing.TB, exprs map[string]string) map[string]T {
	t.Helper()
	in, err := json.Marshal(exprs)
	require.NoError(t, err)
	cmd := exec.Command("go", "run", "-C", filepath.Join(RepoRoot(), "tools/promql"), ".")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var res map[string]T
	require.NoError(t, json.Unmarshal(out, &res))
	require.Len(t, res, len(exprs))
	return res
}
