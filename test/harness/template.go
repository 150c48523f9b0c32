package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// An etcd template is the data directory of a stopped cluster whose CRDs and
// admission policies are installed and whose kube-apiserver has written its
// bootstrap objects (the RBAC roles, the system namespaces, the kubernetes
// Service). A cluster whose etcd starts on a copy of it serves the same CRDs
// without creating them or writing those objects. With the workload
// clusters' CRDs a start then costs 3.9 CPU-seconds instead of 6.9 (kube-
// apiserver, etcd and the client; BenchmarkClusterStart), and zone starts
// are most of what the integration tests cost the shared 2-core CI machine.
//
// Templates live beside the zones in the temporary folder, one per content
// key (templateKey), so that every test process of a run shares them; the
// first process that needs one builds it and renames it into place.

// templateFormat changes when what a template holds or how it is built does,
// which makes every older template unused.
const templateFormat = "1"

// templateRootName is the folder under os.TempDir() holding the templates.
const templateRootName = "siterecovery-etcd-templates"

// unusedTemplateAge is how long a template may go unused before a build of
// another one removes it (a new kube version or CRD change leaves the old).
const unusedTemplateAge = 24 * time.Hour

// templateKey names the template for a cluster with crds: it covers the etcd
// and kube-apiserver binaries (a template is the storage of one version) and
// the CRDs and the admission policies they bring, byte for byte.
func templateKey(binDir string, crds []*apiextensionsv1.CustomResourceDefinition) (string, error) {
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "format %s\n", templateFormat)
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		st, err := os.Stat(filepath.Join(binDir, bin))
		if err != nil {
			return "", err
		}
		_, _ = fmt.Fprintf(h, "%s %d %d\n", bin, st.Size(), st.ModTime().UnixNano())
	}
	sorted := append([]*apiextensionsv1.CustomResourceDefinition(nil), crds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, crd := range sorted {
		b, err := json.Marshal(crd)
		if err != nil {
			return "", err
		}
		_, _ = h.Write(b)
		if crd.Name == virtualMachineCRD {
			b, err := os.ReadFile(filepath.Join(RepoRoot(), filepath.FromSlash(kubevirtPolicies)))
			if err != nil {
				return "", fmt.Errorf("admission policies: %w", err)
			}
			_, _ = h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// templates makes one build per key in a test process: the workload
// clusters of a zone start at once and want the same template.
var templates sync.Map // key -> *templateBuild

type templateBuild struct {
	once sync.Once
	dir  string
	err  error
}

// etcdTemplate returns the template for a cluster with crds, building it
// first if no test process of this machine has. A template is only a
// shortcut: if it cannot be had, the reason goes to the test process's
// output once and "" starts clusters the long way.
func etcdTemplate(ctx context.Context, binDir string, crds []*apiextensionsv1.CustomResourceDefinition, scheme *runtime.Scheme) string {
	key, err := templateKey(binDir, crds)
	if err != nil {
		key = "unkeyed"
	}
	v, _ := templates.LoadOrStore(key, &templateBuild{err: err})
	b := v.(*templateBuild)
	b.once.Do(func() {
		if b.err == nil {
			b.dir, b.err = findOrBuildTemplate(ctx, key, binDir, crds, scheme)
		}
		if b.err != nil {
			fmt.Fprintf(os.Stderr, "harness: clusters start without an etcd template: %v\n", b.err)
		}
	})
	return b.dir
}

func findOrBuildTemplate(ctx context.Context, key, binDir string, crds []*apiextensionsv1.CustomResourceDefinition, scheme *runtime.Scheme) (string, error) {
	root := filepath.Join(os.TempDir(), templateRootName)
	dir := filepath.Join(root, key)
	if _, err := os.Stat(dir); err == nil {
		now := time.Now()
		_ = os.Chtimes(dir, now, now) // in use: pruneTemplates keeps it
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("etcd template: %w", err)
	}
	pruneTemplates(root)
	work, err := os.MkdirTemp(root, key+".building-")
	if err != nil {
		return "", fmt.Errorf("etcd template: %w", err)
	}
	defer func() { _ = os.RemoveAll(work) }()
	c, err := startCluster(ctx, "template", binDir, work, copyCRDs(crds), scheme, Options{}, "")
	if err != nil {
		return "", fmt.Errorf("etcd template: %w", err)
	}
	// SIGTERM to kube-apiserver, then to etcd: etcd closes its WAL and
	// database cleanly, so a copy of the folder is a consistent store.
	if err := c.stop(); err != nil {
		return "", fmt.Errorf("etcd template: %w", err)
	}
	// Another test process may have renamed the same template into place
	// first; theirs is as good as this one.
	if err := os.Rename(filepath.Join(work, etcdDataDir), dir); err != nil {
		if _, statErr := os.Stat(dir); statErr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("etcd template: %w", err)
	}
	return dir, nil
}

// pruneTemplates removes templates unused for unusedTemplateAge, and builds
// left behind by a killed process as long.
func pruneTemplates(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && time.Since(info.ModTime()) > unusedTemplateAge {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}
