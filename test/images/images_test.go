package images

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const version, revision = "0.0.0-test", "0123456789abcdef"

// build runs the image builder for the given images (all when none) into a new
// OCI layout and returns it read back.
func build(t *testing.T, root string, only ...string) map[string]ociIndex {
	t.Helper()
	out := filepath.Join(t.TempDir(), "layout")
	args := []string{"run", "-C", filepath.Join(root, "tools/images"), ".",
		"-root", root, "-out", out, "-version", version, "-revision", revision, "-epoch", "1700000000"}
	if len(only) > 0 {
		args = append(args, "-images", strings.Join(only, ","))
	}
	cmd := exec.Command("go", args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	images, err := readLayout(out)
	if err != nil {
		t.Fatal(err)
	}
	return images
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every image (go build, apt-get download)")
	}
	root := repoRoot(t)
	images := build(t, root)

	// A flag each binary's usage must list.
	flags := map[string]string{"quorum-manager": "-metrics-bind-address", "pg-controller": "-metrics-bind-address",
		"siterecovery-console": "-listen", "siterecovery-probe": "-timeout", "drbd-node-agent": "-metrics-bind-address"}
	for name, flag := range flags {
		for _, platform := range platforms {
			t.Run(name+"/"+platform, func(t *testing.T) {
				idx, ok := images[name+":"+version]
				if !ok {
					t.Fatalf("the layout has no %s:%s", name, version)
				}
				if len(idx.Platforms) != len(platforms) {
					t.Errorf("the index lists %d platforms, want %v", len(idx.Platforms), platforms)
				}
				img, ok := idx.Platforms[platform]
				if !ok {
					t.Fatalf("the index of %s lists no %s", name, platform)
				}
				checkImage(t, root, name, flag, platform, img)
			})
		}
	}

	t.Run("reproducible", func(t *testing.T) {
		again := build(t, root, "pg-controller")
		if a, b := images["pg-controller:"+version].Digest, again["pg-controller:"+version].Digest; a != b {
			t.Errorf("two builds of one commit differ: %s and %s", a, b)
		}
	})
}

// platforms are the platforms every image's index must list, with the ELF
// machine of each one's binaries.
var platforms = []string{"linux/amd64", "linux/arm64"}

var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkImage checks one platform's image of name: its config, the files of its
// root filesystem, its SBOM and, for the agent, its dpkg database. Binaries of
// the test machine's architecture also run.
func checkImage(t *testing.T, root, name, flag, platform string, img ociImage) {
	t.Helper()
	arch := strings.TrimPrefix(platform, "linux/")
	native := arch == runtime.GOARCH
	cfg := img.Config.Config
	entry := "/usr/local/bin/" + name
	if len(cfg.Entrypoint) != 1 || cfg.Entrypoint[0] != entry {
		t.Errorf("entrypoint %q, want [%s]", cfg.Entrypoint, entry)
	}
	if img.Config.OS+"/"+img.Config.Architecture != platform {
		t.Errorf("config platform %s/%s, want %s", img.Config.OS, img.Config.Architecture, platform)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   "https://github.com/siterecovery/siterecovery",
	} {
		if got := cfg.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	wantUser := "65532:65532"
	if name == "drbd-node-agent" {
		wantUser = "0:0"
	}
	if cfg.User != wantUser {
		t.Errorf("user %q, want %q", cfg.User, wantUser)
	}

	fs := t.TempDir()
	if err := unpack(img, fs); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(fs, entry)
	checkStatic(t, bin, arch)
	if native {
		// The entrypoint runs: its flag usage is the binary's own.
		out, err := exec.Command(bin, "-h").CombinedOutput()
		if err != nil || !strings.Contains(string(out), flag) {
			t.Errorf("%s -h: %v\n%s", entry, err, out)
		}
	}
	var debs []dpkgPackage
	if name == "drbd-node-agent" {
		checkDRBDUtils(t, fs, cfg.Labels["io.siterecovery.debian-packages"], arch, native)
		debs = checkDpkgDatabase(t, root, fs, cfg.Labels["io.siterecovery.debian-packages"], arch)
	} else if !passwdHas(t, fs, "65532") {
		t.Errorf("/etc/passwd has no user 65532")
	}
	checkSBOM(t, fs, name, bin, debs)
}

// checkStatic fails unless bin is an ELF executable of arch's machine without an
// interpreter or shared libraries, so that it runs on the empty base.
func checkStatic(t *testing.T, bin, arch string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != machines[arch] {
		t.Errorf("%s is an ELF for %s, want %s", bin, f.Machine, machines[arch])
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has an ELF interpreter: not static", bin)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", bin, libs)
	}
}

// checkDRBDUtils checks that drbdadm, drbdsetup and drbdmeta are executables
// of arch's machine in the image. On the test machine's architecture it also runs
// the image's drbdadm on the image's own libraries: in a chroot when the test runs
// as root, else through the image's dynamic loader (drbdsetup --version needs the
// kernel module, which a build machine need not have).
func checkDRBDUtils(t *testing.T, fs, packages, arch string, native bool) {
	t.Helper()
	if !strings.Contains(packages, "drbd-utils=") {
		t.Errorf("label io.siterecovery.debian-packages %q names no drbd-utils version", packages)
	}
	for _, tool := range []string{"drbdadm", "drbdsetup", "drbdmeta"} {
		p := filepath.Join(fs, "usr/sbin", tool)
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("/usr/sbin/%s is not an executable of the image: %v", tool, err)
			continue
		}
		if f, err := elf.Open(p); err != nil {
			t.Errorf("/usr/sbin/%s: %v", tool, err)
		} else {
			if f.Machine != machines[arch] {
				t.Errorf("/usr/sbin/%s is an ELF for %s, want %s", tool, f.Machine, machines[arch])
			}
			f.Close()
		}
	}
	if !native {
		return
	}
	for _, tool := range []string{"drbdadm"} {
		var cmd *exec.Cmd
		switch {
		case os.Geteuid() == 0:
			cmd = exec.Command("chroot", fs, "/usr/sbin/"+tool, "--version")
		case runtime.GOARCH == "amd64":
			lib := filepath.Join(fs, "usr/lib/x86_64-linux-gnu")
			cmd = exec.Command(filepath.Join(lib, "ld-linux-x86-64.so.2"), "--library-path", lib,
				filepath.Join(fs, "usr/sbin", tool), "--version")
		default:
			t.Skipf("running %s needs root (chroot) or amd64", tool)
		}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "DRBDADM_VERSION=") {
			t.Errorf("%s --version in the image: %v\n%s", tool, err, out)
		}
	}
}

func passwdHas(t *testing.T, fs, uid string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fs, "etc/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, ":"); len(f) > 2 && f[2] == uid {
			return true
		}
	}
	return false
}
