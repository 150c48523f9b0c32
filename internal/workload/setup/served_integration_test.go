package setup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/siterecovery/siterecovery/internal/scheme"
	"github.com/siterecovery/siterecovery/internal/workload/setup"
	"github.com/siterecovery/siterecovery/test/harness"
)

// lines collects a manager's log lines.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, prefix+" "+args)
}

func (l *lines) has(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.all {
		found := true
		for _, p := range parts {
			found = found && strings.Contains(line, p)
		}
		if found {
			return true
		}
	}
	return false
}

// TestPGControllerStartsWithoutOptionalStoragePaths: pg-controller starts on
// a DRBD-only site, which serves neither VolSync's nor csi-addons' kinds,
// with its ProtectionGroup and claim controllers running and a log line
// naming what is off and why; once those CRDs are installed, a restarted
// pg-controller runs the VolSync and VolumeReplicationGroup controllers too.
// Before, the VolSync controllers' watches of unserved kinds kept the whole
// manager from starting.
func TestPGControllerStartsWithoutOptionalStoragePaths(t *testing.T) {
	root := harness.RepoRoot()
	thirdparty := filepath.Join(root, "test", "crds", "thirdparty")
	entries, err := os.ReadDir(thirdparty)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{filepath.Join(root, "charts", "workload-control-plane", "crds")}
	var optional []string
	for _, e := range entries {
		p := filepath.Join(thirdparty, e.Name())
		if strings.HasPrefix(e.Name(), "volsync.backube_") || strings.HasPrefix(e.Name(), "replication.storage.openshift.io_") {
			optional = append(optional, p)
			continue
		}
		base = append(base, p)
	}
	z := harness.Start(t, harness.Options{CRDDirectoryPaths: base, Scheme: scheme.New()}, "drbd-site")
	cfg := z.Clusters["drbd-site"].Config

	run := func(want ...string) *lines {
		logs := &lines{}
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.New(), Logger: funcr.New(logs.add, funcr.Options{}),
			Metrics: metricsserver.Options{BindAddress: "0"}, Cache: cache.Options{ByObject: setup.CacheByObject()},
			Controller: config.Controller{SkipNameValidation: ptr.To(true), CacheSyncTimeout: 20 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		if err := setup.PGController(setup.PGOptions{OperatorNamespace: "siterecovery-system"})(mgr, setup.Options{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("pg-controller stopped with an error: %v", err)
			}
		}()
		deadline := time.After(2 * time.Minute)
		for _, name := range want {
			for !logs.has("Starting workers", fmt.Sprintf("%q", name)) {
				select {
				case err := <-done:
					t.Fatalf("pg-controller stopped before %s started: %v", name, err)
				case <-deadline:
					t.Fatalf("controller %s never started", name)
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		return logs
	}

	logs := run("protectiongroup", "drbd-claim-gc")
	for _, off := range []string{"VolSync replication is off", "ReplicationSource.volsync.backube", "VolumeReplicationGroups are off", "VolumeGroupReplication.replication.storage.openshift.io"} {
		if !logs.has(off) {
			t.Errorf("no log line says %q", off)
		}
	}
	if logs.has("Starting workers", `"replicationgroupsource"`) {
		t.Error("the VolSync source controller started on a cluster without VolSync")
	}

	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: optional, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	logs = run("protectiongroup", "replicationgroupsource", "replicationgroupdestination", "volumereplicationgroup")
	if logs.has("is off") {
		t.Error("a storage path is still off with its CRDs installed")
	}
}
