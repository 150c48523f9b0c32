package makefile

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ruleRe matches a rule's line: its targets, and the text after "## ".
var ruleRe = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_./ -]*?)\s*:([^=].*)?$`)

// rules returns each target the file defines with its "## " description ("" when it has none).
func rules(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		m := ruleRe.FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(l, "\t") {
			continue
		}
		_, desc, _ := strings.Cut(m[2], "## ")
		for _, target := range strings.Fields(m[1]) {
			out[target] = strings.TrimSpace(desc)
		}
	}
	return out
}

func TestEveryTargetHasAHelpText(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	targets := rules(t, filepath.Join(root, "Makefile"))
	included, err := filepath.Glob(filepath.Join(root, "hack/make/*.mk"))
	if err != nil {
		t.Fatal(err)
	}
	if len(included) == 0 {
		t.Fatal("no hack/make/*.mk: the fault and bench targets live there")
	}
	for _, f := range included {
		for k, v := range rules(t, f) {
			targets[k] = v
		}
	}
	for _, want := range []string{"help", "build", "test", "fault-matrix", "bench", "images-lock"} {
		if _, ok := targets[want]; !ok {
			t.Errorf("no target %s in the Makefile or hack/make/*.mk", want)
		}
	}
	cmd := exec.Command("make", "--no-print-directory", "-s", "help")
	cmd.Dir = root
	help, err := cmd.Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	listed := map[string]string{}
	for _, l := range strings.Split(string(help), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			listed[f[0]] = strings.Join(f[1:], " ")
		}
	}
	for target, desc := range targets {
		if desc == "" {
			t.Errorf("target %s has no `## ` description: make help cannot list it", target)
			continue
		}
		if got := listed[target]; got != strings.Join(strings.Fields(desc), " ") {
			t.Errorf("make help lists %s as %q, want its ## text %q", target, got, desc)
		}
	}
}
