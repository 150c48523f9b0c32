package chartrender

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/siterecovery/siterecovery/test/harness"
)

// Helm is the path of the helm binary hack/helm.sh builds once into the
// cache (tools/helm pins its version), or why it could not be built.
var Helm = sync.OnceValues(func() (string, error) {
	out, err := exec.Command(filepath.Join(harness.RepoRoot(), "hack", "helm.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("building helm (hack/helm.sh): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
})

// RunHelm runs helm with args in the repository, values (when any) as its
// standard input in JSON, which helm reads as YAML with `-f -`. It returns
// helm's standard output, and when helm fails an error with what it wrote
// on its standard error.
func RunHelm(values map[string]any, args ...string) (string, error) {
	helm, err := Helm()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(helm, args...)
	cmd.Dir = harness.RepoRoot()
	if len(values) > 0 {
		in, err := json.Marshal(values)
		if err != nil {
			return "", err
		}
		cmd.Args = append(cmd.Args, "-f", "-")
		cmd.Stdin = bytes.NewReader(in)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// rendered is what `helm template` printed for one (chart, namespace,
// values, API versions), or its error.
type rendered struct {
	manifest string
	err      error
}

// templates caches renders within a test process: a package renders the
// same chart with the same values many times, and each helm run costs a
// process start. Callers get objects decoded afresh from the text, so one
// caller's changes never reach another.
var templates = struct {
	sync.Mutex
	m map[string]rendered
}{m: map[string]rendered{}}

// template runs `helm template sr charts/<chart>` for a release in
// namespace, at the harness's Kubernetes version, once per distinct input.
func template(chart, namespace string, values map[string]any, apiVersions []string) (string, error) {
	key, err := json.Marshal([]any{chart, namespace, values, apiVersions})
	if err != nil {
		return "", err
	}
	templates.Lock()
	r, ok := templates.m[string(key)]
	templates.Unlock()
	if ok {
		return r.manifest, r.err
	}
	args := []string{"template", "sr", filepath.Join("charts", chart), "--namespace", namespace, "--kube-version", harness.KubeVersion}
	for _, v := range apiVersions {
		args = append(args, "--api-versions", v)
	}
	r.manifest, r.err = RunHelm(values, args...)
	templates.Lock()
	templates.m[string(key)] = r
	templates.Unlock()
	return r.manifest, r.err
}
