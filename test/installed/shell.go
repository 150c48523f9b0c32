package installed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/siterecovery/siterecovery/test/harness"
)

// Shell runs commands as a user's shell would: in the repository, helm and
// kubectl on PATH, a variable per cluster naming its admin kubeconfig ($Q,
// $P, $D for docs/install.md).
type Shell struct {
	Dir string
	Env []string
}

// NewShell writes each admin kubeconfig to folder dir as <var>.kubeconfig
// and sets <var> to its path; helm keeps its caches and settings in dir, not
// in the user's home. hack/helm.sh and hack/kubectl.sh build the tools once.
func NewShell(dir string, kubeconfigs map[string][]byte) (*Shell, error) {
	root := harness.RepoRoot()
	var vars []string
	for v, kc := range kubeconfigs {
		path := filepath.Join(dir, v+".kubeconfig")
		if err := os.WriteFile(path, kc, 0o600); err != nil {
			return nil, err
		}
		vars = append(vars, v+"="+path)
	}
	var bins []string
	for _, tool := range []string{"helm.sh", "kubectl.sh"} {
		out, err := exec.Command(filepath.Join(root, "hack", tool)).Output()
		if err != nil {
			return nil, fmt.Errorf("building %s (hack/%s): %w", strings.TrimSuffix(tool, ".sh"), tool, err)
		}
		bins = append(bins, filepath.Dir(strings.TrimSpace(string(out))))
	}
	vars = append(vars, "HELM_CACHE_HOME="+filepath.Join(dir, "helm-cache"), "HELM_CONFIG_HOME="+filepath.Join(dir, "helm-config"),
		"HELM_DATA_HOME="+filepath.Join(dir, "helm-data"), "PATH="+strings.Join(bins, ":")+":"+os.Getenv("PATH"))
	return &Shell{Dir: root, Env: append(os.Environ(), vars...)}, nil
}

// With is the shell with more variables (a later PATH wins).
func (s *Shell) With(vars ...string) *Shell {
	return &Shell{Dir: s.Dir, Env: append(append([]string{}, s.Env...), vars...)}
}

// Path is the shell's PATH.
func (s *Shell) Path() string {
	p := ""
	for _, kv := range s.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			p = v
		}
	}
	return p
}

// Run runs a script with bash -euo pipefail and returns its output, stdout
// and stderr together.
func (s *Shell) Run(script string) (string, error) {
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	out, err := cmd.CombinedOutput()
	return string(out), err
}
