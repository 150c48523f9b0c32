package harness_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger; without one it prints a warning
	// with a stack trace after 30 seconds.
	log.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	os.Exit(m.Run())
}
