package drbd

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces dir/name with data so that readers (drbdadm)
// see either the old or the new file, never a torn one: write a temp
// file in the same directory, fsync it, rename it over the target, then
// fsync the directory so the rename survives a crash. If the content is
// already identical nothing is written and changed is false. The file is
// readable by its owner only: a resource file may hold DRBD's shared secret.
func WriteFileAtomic(dir, name string, data []byte) (changed bool, err error) {
	return replaceFile(dir, name, data, true)
}

// ReplaceDerivedFile is WriteFileAtomic without the fsyncs, for a file
// rendered from the API that its writer renders and compares again on every
// start (a resource file): readers still never see a torn file while the node
// runs; a power loss may leave it old or damaged, and the agent's start
// rewrites it before it brings the resource up. A failover changes every
// replica's resource file, and two fsyncs each would sit on its path.
func ReplaceDerivedFile(dir, name string, data []byte) (changed bool, err error) {
	return replaceFile(dir, name, data, false)
}

func replaceFile(dir, name string, data []byte, durable bool) (changed bool, err error) {
	if name == "" || filepath.Base(name) != name {
		return false, fmt.Errorf("write %q: name must be a plain file name", name)
	}
	target := filepath.Join(dir, name)
	old, err := os.ReadFile(target)
	switch {
	case err == nil && bytes.Equal(old, data):
		return false, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, err
	}

	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil && durable {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("write %s: %w", target, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return false, err
	}
	if !durable {
		return true, nil
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: some filesystems refuse directory fsync
		_ = d.Close()
	}
	return true, nil
}
