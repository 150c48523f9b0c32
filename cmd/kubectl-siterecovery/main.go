// Command kubectl-siterecovery is the operator CLI, run as `kubectl siterecovery`
// when on PATH. `go install ./cmd/kubectl-siterecovery` installs it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/siterecovery/siterecovery/internal/cli"
)

func main() {
	// Ctrl-C cancels the context: a command that waits stops waiting, and the
	// request it made goes on.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}
