package drbd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// TLS is the net section's transport encryption: DRBD's TCP transport puts
// kernel TLS on both sockets of a connection after asking the kernel's
// handshake service (tlshd of ktls-utils) to do the handshake (drbd kernel
// drbd_transport_tcp.c, "tls" of net_conf; added in drbd-9.2.6). The names
// are key descriptions in the node's kernel keyring that drbdsetup resolves
// with request_key (drbd-utils user/v9/config_flags.c, KEY_SERIAL options
// tls-keyring, tls-privkey, tls-certificate); empty ones are left out, and
// tlshd then uses the certificate and key of its own configuration.
type TLS struct {
	Keyring     string
	PrivKey     string
	Certificate string
}

// keyDescription is what a rendered key description may hold: nothing that
// drbdadm's tokenizer treats specially.
var keyDescription = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

func (t *TLS) validate() error {
	var errs []error
	for _, o := range t.options() {
		if !keyDescription.MatchString(o[1]) {
			errs = append(errs, fmt.Errorf("%s %q: must be a key description of [A-Za-z0-9._:-], at most 128 characters", o[0], o[1]))
		}
	}
	if (t.PrivKey == "") != (t.Certificate == "") {
		errs = append(errs, errors.New("tls-privkey and tls-certificate: set both or neither"))
	}
	return errors.Join(errs...)
}

// options are the key-description options that are set, in file order.
func (t *TLS) options() [][2]string {
	var out [][2]string
	for _, o := range [][2]string{{"tls-keyring", t.Keyring}, {"tls-privkey", t.PrivKey}, {"tls-certificate", t.Certificate}} {
		if o[1] != "" {
			out = append(out, o)
		}
	}
	return out
}

// render writes the net options: "tls yes;" is the boolean net option as
// drbd.conf spells it (drbd-utils documentation/v9/drbdsetup-options.xml,
// option "tls", and config_flags.c, BOOLEAN "tls" of the net options).
func (t *TLS) render(b *bytes.Buffer) {
	b.WriteString("        tls yes;\n")
	for _, o := range t.options() {
		fmt.Fprintf(b, "        %s \"%s\";\n", o[0], o[1])
	}
}

// First versions that do TLS: the kernel module's kTLS support came with
// drbd-9.2.6 (LINBIT/drbd, "drbd_transport_tcp: add kTLS support"), and
// drbdsetup's tls options with drbd-utils 9.26.0 (LINBIT/drbd-utils
// ChangeLog, "drbdsetup,v9: support for TLS/kTLS"). An older drbdadm
// refuses the file ("Parse error: 'an option keyword' expected, but got
// 'tls'").
var (
	MinTLSKernel = Version{9, 2, 6}
	MinTLSUtils  = Version{9, 26, 0}
)

// Version is a DRBD version, major.minor.sublevel.
type Version [3]int

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// Less orders versions.
func (v Version) Less(o Version) bool {
	for i := range v {
		if v[i] != o[i] {
			return v[i] < o[i]
		}
	}
	return false
}

// versionFromCode splits drbdadm's 0xMMmmss version code.
func versionFromCode(code int64) Version {
	return Version{int(code >> 16 & 0xff), int(code >> 8 & 0xff), int(code & 0xff)}
}

// TLSSupport is what a node's DRBD offers for TLS.
type TLSSupport struct {
	// Kernel is the loaded drbd module's version; zero when none is loaded.
	Kernel Version
	// Utils is drbd-utils' version.
	Utils Version
	// SetupHasTLS: drbdsetup lists the tls net option.
	SetupHasTLS bool
}

// OK reports whether DRBD can encrypt the replication link on this node.
func (s TLSSupport) OK() bool {
	return s.SetupHasTLS && !s.Kernel.Less(MinTLSKernel) && !s.Utils.Less(MinTLSUtils)
}

// Missing says what the node lacks, in words for an operator; empty when OK.
func (s TLSSupport) Missing() string {
	var out []string
	switch {
	case s.Kernel == Version{}:
		out = append(out, fmt.Sprintf("no DRBD kernel module is loaded (need >= %s)", MinTLSKernel))
	case s.Kernel.Less(MinTLSKernel):
		out = append(out, fmt.Sprintf("DRBD kernel module %s (need >= %s)", s.Kernel, MinTLSKernel))
	}
	switch {
	case s.Utils.Less(MinTLSUtils):
		out = append(out, fmt.Sprintf("drbd-utils %s (need >= %s)", s.Utils, MinTLSUtils))
	case !s.SetupHasTLS:
		out = append(out, fmt.Sprintf("drbd-utils %s whose drbdsetup lists no --tls option", s.Utils))
	}
	return strings.Join(out, ", ")
}

// TLSSupport asks the node's DRBD what it supports: "drbdadm --version"
// prints the loaded module's and the utilities' version codes
// (DRBD_KERNEL_VERSION_CODE, read from /proc/drbd or modinfo, and
// DRBDADM_VERSION_CODE; drbd-utils user/v9/drbdadm_main.c), and "drbdsetup
// help new-peer" lists the net options that drbdsetup was built with.
func (a *Adm) TLSSupport(ctx context.Context) (TLSSupport, error) {
	bin := a.DrbdadmPath
	if bin == "" {
		bin = "drbdadm"
	}
	out, err := a.exec().Run(ctx, bin, "--version")
	if err != nil {
		return TLSSupport{}, fmt.Errorf("drbdadm --version: %w", err)
	}
	var s TLSSupport
	for line := range strings.Lines(string(out)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		code, perr := strconv.ParseInt(strings.TrimPrefix(v, "0x"), 16, 64)
		switch {
		case k == "DRBD_KERNEL_VERSION_CODE" && perr == nil:
			s.Kernel = versionFromCode(code)
		case k == "DRBDADM_VERSION_CODE" && perr == nil:
			s.Utils = versionFromCode(code)
		}
	}
	if s.Utils == (Version{}) {
		return TLSSupport{}, fmt.Errorf("drbdadm --version printed no DRBDADM_VERSION_CODE")
	}
	help, err := a.exec().Run(ctx, a.setupPath(), "help", "new-peer")
	if err != nil {
		return TLSSupport{}, fmt.Errorf("drbdsetup help new-peer: %w", err)
	}
	s.SetupHasTLS = strings.Contains(string(help), "[--tls=")
	return s, nil
}
