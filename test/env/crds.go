package env

import (
	"os"
	"path/filepath"
	"strings"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/harness"
)

// crdPathsOf installs on each cluster of a zone only the CRDs that cluster
// serves in production, as the charts and the storage vendors install them:
// the quorum cluster the protectionzone chart's; a workload cluster the
// workload chart's and the third-party kinds its backend uses. A DRBD zone's
// workload clusters then lack VolSync's and csi-addons' kinds, as a DRBD-only
// site does, and every such CRD not installed spares kube-apiserver seconds
// of CPU at each start. KubeVirt's instancetype and preference CRDs
// (test/crds/instancetype) are added to the workload clusters only with
// instancetypes, for the tests that copy them.
func crdPathsOf(backend srv1alpha1.StorageBackend, instancetypes bool) func(cluster string) []string {
	root := harness.RepoRoot()
	return func(cluster string) []string {
		if cluster == Quorum {
			return []string{filepath.Join(root, "charts", "protectionzone", "crds")}
		}
		paths := []string{filepath.Join(root, "charts", "workload-control-plane", "crds")}
		dir := filepath.Join(root, "test", "crds", "thirdparty")
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil // the harness's default set, which names the error
		}
		for _, e := range entries {
			if backend == srv1alpha1.BackendDRBD && notOnDRBDSites(e.Name()) {
				continue
			}
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
		if instancetypes {
			paths = append(paths, filepath.Join(root, "test", "crds", "instancetype"))
		}
		return paths
	}
}

// notOnDRBDSites reports whether a third-party CRD file is one a DRBD-only
// workload cluster need not have: VolSync's movers and csi-addons' volume
// group replication.
func notOnDRBDSites(file string) bool {
	return strings.HasPrefix(file, "volsync.backube_") || strings.HasPrefix(file, "replication.storage.openshift.io_")
}
