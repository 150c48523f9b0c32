package krew

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Binary is the plugin's executable, the name kubectl finds on PATH.
const Binary = "kubectl-siterecovery"

// versionVar and commitVar are the CLI's variables -ldflags sets.
const (
	versionVar = "github.com/siterecovery/siterecovery/internal/cli.version"
	commitVar  = "github.com/siterecovery/siterecovery/internal/cli.commit"
)

// Platform is a GOOS/GOARCH pair krew selects on (its os and arch labels
// use Go's names).
type Platform struct{ OS, Arch string }

// Platforms are the release's platforms.
var Platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// Archive is one platform's release archive.
type Archive struct {
	Platform Platform
	// Name is the file name, kubectl-siterecovery_<os>_<arch>.tar.gz.
	Name   string
	Path   string
	SHA256 string
}

// ArchiveName is the file name of a platform's archive.
func ArchiveName(p Platform) string { return fmt.Sprintf("%s_%s_%s.tar.gz", Binary, p.OS, p.Arch) }

// Build builds the CLI of the module at root for p, stamped with version and
// commit, and writes its archive into dir.
func Build(ctx context.Context, root, dir, version, commit string, p Platform) (Archive, error) {
	tmp, err := os.MkdirTemp("", "krew-build-")
	if err != nil {
		return Archive{}, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, Binary)
	ldflags := fmt.Sprintf("-s -w -buildid= -X %s=%s -X %s=%s", versionVar, version, commitVar, commit)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", bin, "./cmd/"+Binary)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+p.OS, "GOARCH="+p.Arch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		return Archive{}, fmt.Errorf("go build for %s/%s: %w\n%s", p.OS, p.Arch, err, out)
	}
	a := Archive{Platform: p, Name: ArchiveName(p), Path: filepath.Join(dir, ArchiveName(p))}
	if err := writeArchive(a.Path, bin); err != nil {
		return Archive{}, err
	}
	a.SHA256, err = SHA256(a.Path)
	return a, err
}

// writeArchive writes a tar.gz holding bin as Binary, with headers that do
// not depend on the machine or the time of the build.
func writeArchive(path, bin string) (err error) {
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	h := &tar.Header{Name: Binary, Mode: 0o755, Size: st.Size(), ModTime: time.Unix(0, 0).UTC(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := io.Copy(tw, src); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// Export writes the tree of commit ref of the repository at root into dir
// (git archive): a release is built from a commit, never from a work tree.
// It returns the commit's full hash.
func Export(ctx context.Context, root, ref, dir string) (string, error) {
	c, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--verify", ref+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse %s: %w", ref, err)
	}
	commit := strings.TrimSpace(string(c))
	export := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", root, commit, dir)
	if b, err := export.CombinedOutput(); err != nil {
		return "", fmt.Errorf("exporting %s: %w\n%s", commit, err, b)
	}
	return commit, nil
}

// SHA256 is the hex sha256 of a file, as krew checks it.
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
