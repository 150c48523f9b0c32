// Command kubectl is kubectl built from the Go module proxy, at the version of
// the harness's kube-apiserver, for the tests that run the repository's shell
// scripts (scripts/bootstrap-zone.sh). It is what k8s.io/kubernetes/cmd/kubectl
// does; that module cannot be built outside its own tree.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
