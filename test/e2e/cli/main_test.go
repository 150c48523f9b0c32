package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/siterecovery/siterecovery/internal/cli"
)

// TestMain runs the CLI itself when the test binary is called as
// kubectl-siterecovery: the runbook tests put a link of that name on PATH, so
// the scripts run the code under test without a separate build.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "kubectl-siterecovery" {
		os.Exit(cli.Run(context.Background(), genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:]))
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(m.Run())
}
