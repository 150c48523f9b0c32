package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Versions of the binaries built by hack/kube-binaries.sh; they name the default
// cache folder.
const (
	KubeVersion = "v1.37.2"
	EtcdVersion = "v3.6.16"
)

// RepoRoot returns the root of the Go module (the directory holding go.mod), found from
// the location of this source file so that tests in any package can locate fixtures.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("harness: cannot determine the source location of the harness package")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("harness: no go.mod above " + filepath.Dir(file))
		}
		dir = parent
	}
}

// DefaultCRDPaths returns the CRD directories integration tests install: the charts'
// CRDs of this project and the third-party fixtures under test/crds/thirdparty. Only
// directories that exist are returned.
func DefaultCRDPaths() []string {
	root := RepoRoot()
	var paths []string
	for _, rel := range []string{
		"charts/protectionzone/crds",
		"charts/workload-control-plane/crds",
		"test/crds/thirdparty",
	} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if info, err := os.Stat(p); err == nil && info.IsDir() {
			paths = append(paths, p)
		}
	}
	return paths
}

// KwokVersion is the kwok hack/kwok.sh builds (tools/kwok pins it).
const KwokVersion = "v0.8.0"

// KwokDir returns the folder hack/kwok.sh builds kwok and its
// stages.yaml into: $SITERECOVERY_KWOK if set, else
// ${SITERECOVERY_CACHE:-$XDG_CACHE_HOME/siterecovery}/kwok-<v>.
func KwokDir() (string, error) {
	dir := os.Getenv("SITERECOVERY_KWOK")
	if dir == "" {
		dir = filepath.Join(cacheRoot(), "kwok-"+KwokVersion)
	}
	if err := hasBinaries(dir, "kwok"); err != nil {
		return "", fmt.Errorf("no kwok for the full control plane: %w; run `make kwok` (hack/kwok.sh)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stages.yaml")); err != nil {
		return "", fmt.Errorf("no kwok stages: %w; run `make kwok` (hack/kwok.sh)", err)
	}
	return dir, nil
}

// ControlPlaneBinaries checks that dir holds kube-controller-manager and
// kube-scheduler besides etcd and kube-apiserver.
func ControlPlaneBinaries(dir string) error {
	if err := hasBinaries(dir, "kube-controller-manager", "kube-scheduler"); err != nil {
		return fmt.Errorf("%w; run `make kube-binaries` (hack/kube-binaries.sh), which builds them beside kube-apiserver", err)
	}
	return nil
}

// DefaultBinaryDir is the folder hack/kube-binaries.sh builds into:
// ${SITERECOVERY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/siterecovery}/kube-<v>-etcd-<v>.
func DefaultBinaryDir() string {
	return filepath.Join(cacheRoot(), fmt.Sprintf("kube-%s-etcd-%s", KubeVersion, EtcdVersion))
}

// cacheRoot is ${SITERECOVERY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/siterecovery}.
func cacheRoot() string {
	if root := os.Getenv("SITERECOVERY_CACHE"); root != "" {
		return root
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "siterecovery")
}

// BinaryDir returns the folder holding the etcd and kube-apiserver binaries:
// KUBEBUILDER_ASSETS if set, else DefaultBinaryDir if it holds both binaries.
func BinaryDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		if err := hasBinaries(dir); err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s: %w", dir, err)
		}
		return dir, nil
	}
	dir := DefaultBinaryDir()
	if err := hasBinaries(dir); err != nil {
		return "", fmt.Errorf("no kube-apiserver/etcd binaries: KUBEBUILDER_ASSETS is not set and %w; "+
			"run `make kube-binaries` (hack/kube-binaries.sh) or point KUBEBUILDER_ASSETS at a folder holding both", err)
	}
	return dir, nil
}

func hasBinaries(dir string, names ...string) error {
	if len(names) == 0 {
		names = []string{"etcd", "kube-apiserver"}
	}
	var errs []error
	for _, name := range names {
		p := filepath.Join(dir, name)
		info, err := os.Stat(p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s is missing", p))
		case info.IsDir() || info.Mode().Perm()&0o111 == 0:
			errs = append(errs, fmt.Errorf("%s is not an executable file", p))
		}
	}
	return errors.Join(errs...)
}
