package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ResConfig is the part of a DRBD resource file the simulator needs.
type ResConfig struct {
	Name       string
	Protocol   string
	SndBufKiB  uint64
	Quorum     string
	OnNoQuorum string
	AfterSB    [3]string // after-sb-0pri, -1pri, -2pri
	// CramHMACAlg and SharedSecret are the net section's peer authentication.
	CramHMACAlg  string
	SharedSecret string
	// TLS is the net section's tls value ("yes"), "" when absent.
	TLS     string
	Volumes map[int]Vol
	Hosts   map[string]HostConfig
}

// HostConfig is one `on <host>` section.
type HostConfig struct {
	NodeID int
	Addr   string // "ipv4:1.2.3.4:7000" style, as events2 prints it
}

// stmt is a parsed statement: words, optionally followed by a block.
type stmt struct {
	words []string
	block []stmt
}

// LoadConfig reads a drbd config file, following include globs
// relative to the including file, and returns its resources.
func LoadConfig(path string) (map[string]*ResConfig, error) {
	out := map[string]*ResConfig{}
	return out, loadInto(path, "", out, 0)
}

// LoadResource is LoadConfig for a command on one resource: where an include
// glob matches a file named after it (<name>.res, the agent's layout), only
// that file is read, and the whole config only when it does not define the
// resource. drbdadm itself reads every file; the simulator skips them, or a
// command on each of a node's N resources would read N files, N² per step.
func LoadResource(path, name string) (map[string]*ResConfig, error) {
	out := map[string]*ResConfig{}
	if err := loadInto(path, name, out, 0); err == nil && out[name] != nil {
		return out, nil
	}
	return LoadConfig(path)
}

// loadInto loads path into out; with want set, an include glob that matches
// want's own file loads that file alone.
func loadInto(path, want string, out map[string]*ResConfig, depth int) error {
	if depth > 8 {
		return fmt.Errorf("%s: includes nested too deeply", path)
	}
	data, err := readConfigFile(path)
	if err != nil {
		return err
	}
	stmts, err := parsed(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range stmts {
		switch {
		case len(s.words) == 2 && s.words[0] == "include":
			pat := s.words[1]
			if !filepath.IsAbs(pat) {
				pat = filepath.Join(filepath.Dir(path), pat)
			}
			var matches []string
			if own := filepath.Join(filepath.Dir(pat), want+".res"); want != "" {
				if ok, _ := filepath.Match(pat, own); ok {
					if _, err := os.Stat(own); err == nil {
						matches = []string{own}
					}
				}
			}
			if matches == nil {
				matches, _ = filepath.Glob(pat)
			}
			for _, m := range matches {
				if err := loadInto(m, want, out, depth+1); err != nil {
					return err
				}
			}
		case len(s.words) == 2 && s.words[0] == "resource" && s.block != nil:
			rc, err := resource(s)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			out[rc.Name] = rc
		}
	}
	return nil
}

// readFiles keeps each config file's content with the file's stamp when it
// was read: every drbdadm call reads the node's whole config, one file per
// resource, so a node of N resources read N files per call, N² per step of
// a group of N VMs. A file whose stamp is unchanged is not read again. The
// agent replaces a file by renaming a new one over it, which changes its
// inode and ctime.
var readFiles sync.Map // path → readFile

type fileStamp struct {
	size, mtime, ctime int64
	ino                uint64
}

type readFile struct {
	stamp   fileStamp
	content string
}

// readConfigFile is a config file's content, read again only when its stamp
// changed.
func readConfigFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	stamp := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		stamp.ino, stamp.ctime = st.Ino, st.Ctim.Nano()
	}
	if f, ok := readFiles.Load(path); ok && f.(readFile).stamp == stamp {
		return f.(readFile).content, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	readFiles.Store(path, readFile{stamp, string(data)})
	return string(data), nil
}

// parsedFiles caches the statements of each file content parsed: every
// drbdadm call reads the node's whole config, one file per resource, and a
// file changes only when the agent rewrites it. Statements are never changed
// once parsed, so callers share them.
var parsedFiles sync.Map // content → parseResult

type parseResult struct {
	stmts []stmt
	err   error
}

// parsed is the statements of a config file's content.
func parsed(content string) ([]stmt, error) {
	if r, ok := parsedFiles.Load(content); ok {
		return r.(parseResult).stmts, r.(parseResult).err
	}
	stmts, err := parse(tokenize(content))
	parsedFiles.Store(content, parseResult{stmts, err})
	return stmts, err
}

func resource(s stmt) (*ResConfig, error) {
	rc := &ResConfig{Name: s.words[1], Protocol: "C", Quorum: "off", Volumes: map[int]Vol{}, Hosts: map[string]HostConfig{}}
	for _, c := range s.block {
		switch {
		case c.words[0] == "net":
			for _, o := range c.block {
				if len(o.words) == 2 && o.words[0] == "protocol" {
					rc.Protocol = o.words[1]
				}
				if len(o.words) == 2 && o.words[0] == "sndbuf-size" {
					size, err := parseSize(o.words[1])
					if err != nil {
						return nil, fmt.Errorf("resource %s: sndbuf-size: %w", rc.Name, err)
					}
					rc.SndBufKiB = size / 1024
				}
				if len(o.words) == 2 && o.words[0] == "cram-hmac-alg" {
					rc.CramHMACAlg = o.words[1]
				}
				if len(o.words) == 2 && o.words[0] == "shared-secret" {
					rc.SharedSecret = o.words[1]
				}
				if len(o.words) == 2 && o.words[0] == "tls" && o.words[1] != "no" {
					rc.TLS = o.words[1]
				}
				if len(o.words) == 2 && strings.HasPrefix(o.words[0], "after-sb-") {
					switch o.words[0] {
					case "after-sb-0pri":
						rc.AfterSB[0] = o.words[1]
					case "after-sb-1pri":
						rc.AfterSB[1] = o.words[1]
					case "after-sb-2pri":
						rc.AfterSB[2] = o.words[1]
					}
				}
			}
		case c.words[0] == "options":
			for _, o := range c.block {
				if len(o.words) == 2 && o.words[0] == "quorum" {
					rc.Quorum = o.words[1]
				}
				if len(o.words) == 2 && o.words[0] == "on-no-quorum" {
					rc.OnNoQuorum = o.words[1]
				}
			}
		case c.words[0] == "volume" && len(c.words) == 2:
			n, err := strconv.Atoi(c.words[1])
			if err != nil {
				return nil, fmt.Errorf("resource %s: bad volume %q", rc.Name, c.words[1])
			}
			v := Vol{}
			for _, o := range c.block {
				if len(o.words) == 3 && o.words[0] == "device" && o.words[1] == "minor" {
					v.Minor, _ = strconv.Atoi(o.words[2])
				}
				if len(o.words) == 2 && o.words[0] == "disk" {
					v.Disk = o.words[1]
				}
				if len(o.words) == 2 && o.words[0] == "meta-disk" && o.words[1] != "internal" {
					v.Meta = o.words[1] // flex-external
				}
			}
			rc.Volumes[n] = v
		case c.words[0] == "on" && len(c.words) == 2:
			h := HostConfig{NodeID: -1}
			for _, o := range c.block {
				if len(o.words) == 2 && o.words[0] == "node-id" {
					h.NodeID, _ = strconv.Atoi(o.words[1])
				}
				if len(o.words) == 3 && o.words[0] == "address" {
					h.Addr = o.words[1] + ":" + o.words[2]
				}
			}
			rc.Hosts[c.words[1]] = h
		}
	}
	if len(rc.Volumes) == 0 || len(rc.Hosts) < 1 {
		return nil, fmt.Errorf("resource %s: needs volumes and a host", rc.Name)
	}
	return rc, nil
}

func tokenize(src string) []string {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch c {
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case ' ', '\t', '\n', '\r':
			i++
		case '{', '}', ';':
			toks = append(toks, string(c))
			i++
		case '"':
			j := strings.IndexByte(src[i+1:], '"')
			if j < 0 {
				j = len(src) - i - 1
			}
			toks = append(toks, src[i+1:i+1+j])
			i += j + 2
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \t\r\n{};\"#", rune(src[j])) {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		}
	}
	return toks
}

func parse(toks []string) ([]stmt, error) {
	stmts, rest, err := parseBlock(toks, 0)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("unexpected %q", rest[0])
	}
	return stmts, err
}

func parseBlock(toks []string, depth int) ([]stmt, []string, error) {
	var out []stmt
	var words []string
	for len(toks) > 0 {
		t := toks[0]
		toks = toks[1:]
		switch t {
		case ";":
			if len(words) > 0 {
				out = append(out, stmt{words: words})
			}
			words = nil
		case "{":
			if len(words) == 0 {
				return nil, nil, fmt.Errorf("block without a keyword")
			}
			block, rest, err := parseBlock(toks, depth+1)
			if err != nil {
				return nil, nil, err
			}
			if block == nil {
				block = []stmt{} // non-nil marks "has a block"
			}
			out = append(out, stmt{words: words, block: block})
			words, toks = nil, rest
		case "}":
			if depth == 0 {
				return nil, nil, fmt.Errorf("unbalanced }")
			}
			return out, toks, nil
		default:
			words = append(words, t)
		}
	}
	if depth > 0 {
		return nil, nil, fmt.Errorf("missing }")
	}
	return out, nil, nil
}
