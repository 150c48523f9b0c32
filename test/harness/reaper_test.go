package harness_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/siterecovery/siterecovery/test/harness"
)

// TestHelperAbandonZone is not a test: run by TestReapsZonesOfKilledTests in a child
// process, it starts a zone, prints its directory and waits to be killed.
func TestHelperAbandonZone(t *testing.T) {
	if os.Getenv("HARNESS_ABANDON_ZONE") != "1" {
		t.Skip("helper process only")
	}
	z, err := harness.StartE(t.Context(), harness.Options{CRDDirectoryPaths: []string{}}, "abandoned")
	require.NoError(t, err)
	fmt.Printf("ZONE %s\n", z.Dir)
	time.Sleep(time.Minute)
}

// TestReapsZonesOfKilledTests kills a test process that runs a zone (as a `go test
// -timeout` panic would end it, without cleanups) and checks that the next StartE kills
// the abandoned etcd and kube-apiserver and keeps only their logs.
func TestReapsZonesOfKilledTests(t *testing.T) {
	harness.RequireAPIServers(t)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAbandonZone$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HARNESS_ABANDON_ZONE=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var dir string
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if d, ok := strings.CutPrefix(sc.Text(), "ZONE "); ok {
			dir = d
			break
		}
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.NotEmpty(t, dir, "helper did not start a zone")
	require.Len(t, processesMentioning(t, dir+"/"), 2, "etcd and kube-apiserver outlive the killed test")

	z, err := harness.StartE(t.Context(), harness.Options{CRDDirectoryPaths: []string{}}, "next")
	require.NoError(t, err)
	require.NoError(t, z.Stop())

	assert.Empty(t, processesMentioning(t, dir+"/"), "abandoned processes reaped")
	assert.FileExists(t, filepath.Join(dir, "abandoned", "kube-apiserver.log"), "logs kept")
	assert.NoDirExists(t, filepath.Join(dir, "abandoned", "etcd-data"), "data removed")
	require.NoError(t, os.RemoveAll(dir))
}
