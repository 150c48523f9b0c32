package gather

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// bundle is the tar.gz being written; every file is redacted on the way in.
type bundle struct {
	tw    *tar.Writer
	gz    *gzip.Writer
	red   *redactor
	root  string
	now   time.Time
	files map[string]string // path -> what it holds, for the README
	notes []string          // what could not be gathered and why
}

func newBundle(w io.Writer, root string, red *redactor) *bundle {
	gz := gzip.NewWriter(w)
	return &bundle{tw: tar.NewWriter(gz), gz: gz, red: red, root: root, now: time.Now(), files: map[string]string{}}
}

func (b *bundle) add(path, what string, data []byte) error {
	data = b.red.redact(data)
	hdr := &tar.Header{Name: b.root + "/" + path, Mode: 0o600, Size: int64(len(data)), ModTime: b.now, Typeflag: tar.TypeReg}
	if err := b.tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := b.tw.Write(data); err != nil {
		return err
	}
	b.files[path] = what
	return nil
}

func (b *bundle) note(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

// close writes the README and finishes the archive.
func (b *bundle) close(header string) error {
	var sb strings.Builder
	sb.WriteString(header)
	sb.WriteString("\nFiles:\n")
	paths := make([]string, 0, len(b.files))
	for p := range b.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(&sb, "  %-60s %s\n", p, b.files[p])
	}
	if len(b.notes) > 0 {
		sb.WriteString("\nNot gathered:\n")
		for _, n := range b.notes {
			fmt.Fprintf(&sb, "  - %s\n", n)
		}
	}
	sb.WriteString("\nSecrets appear as metadata and key names only; credentials and the VMs' cloud-init user and network data are replaced by " + Redacted + ".\n")
	if err := b.add("README.txt", "this file", []byte(sb.String())); err != nil {
		return err
	}
	if err := b.tw.Close(); err != nil {
		return err
	}
	return b.gz.Close()
}
