package architecture

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/siterecovery/siterecovery/"

// deps lists every package of this module that the given packages link.
func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", pkgs, err)
	}
	var own []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) {
			own = append(own, strings.TrimPrefix(p, module))
		}
	}
	return own
}

func TestWorkloadBinariesLinkNoQuorumPackage(t *testing.T) {
	for _, bin := range []string{"./cmd/drbd-node-agent", "./cmd/pg-controller"} {
		t.Run(bin, func(t *testing.T) {
			linked := deps(t, bin)
			if len(linked) == 0 {
				t.Fatalf("go list found no package of this module in %s", bin)
			}
			for _, p := range linked {
				if strings.HasPrefix(p, "internal/quorum") {
					t.Errorf("%s links %s: the workload tier must never link the quorum tier", bin, p)
				}
			}
		})
	}
}

func TestNodeAgentLinksNoWorkloadController(t *testing.T) {
	for _, p := range deps(t, "./cmd/drbd-node-agent") {
		if strings.HasPrefix(p, "internal/workload") {
			t.Errorf("drbd-node-agent links %s: the agent runs only its own node's DRBD", p)
		}
	}
}

func TestQuorumManagerLinksNoWorkloadController(t *testing.T) {
	for _, p := range deps(t, "./cmd/quorum-manager") {
		if strings.HasPrefix(p, "internal/workload") || strings.HasPrefix(p, "internal/nodeagent") {
			t.Errorf("quorum-manager links %s: the quorum tier changes workload clusters only through their API", p)
		}
	}
}

// The operator CLI drives DR through the API only: it links no controller, so
// that what it does is what a FailoverRequest or TestFailover does. It may
// link internal/netmap, the network mapping's pure functions, so that
// validate and admission judge a group's networks alike, and internal/report,
// the compliance report's pure function, so that the CLI, the console and the
// metrics give the same figures.
func TestCLILinksNoController(t *testing.T) {
	allowed := []string{"cmd/kubectl-siterecovery", "internal/cli", "internal/kubeconfig", "internal/scheme", "internal/netmap", "internal/report", "apis/"}
	for _, p := range deps(t, "./cmd/kubectl-siterecovery") {
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(p, a)
		}
		if !ok {
			t.Errorf("kubectl-siterecovery links %s: it may link only internal/cli, internal/kubeconfig, internal/scheme, internal/netmap, internal/report and apis/", p)
		}
	}
}

// The console acts only with its users' credentials against the quorum API
// server: it links no controller and none of quorum-manager's code that holds
// the zones' connections; a workload cluster it reads only through a
// kubeconfig Secret the user may read.
func TestConsoleLinksNoControllerNorRemote(t *testing.T) {
	for _, p := range deps(t, "./cmd/siterecovery-console") {
		if strings.HasPrefix(p, "internal/quorum") || strings.HasPrefix(p, "internal/workload") ||
			strings.HasPrefix(p, "internal/nodeagent") || strings.HasPrefix(p, "test/") {
			t.Errorf("siterecovery-console links %s: it reaches clusters only with the signed-in user's token", p)
		}
	}
}
