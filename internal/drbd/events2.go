package drbd

import (
	"errors"
	"fmt"
	"strings"
)

// EventKind is the first word of an events2 line (after an optional
// timestamp).
type EventKind string

// Event kinds printed by drbdsetup events2.
const (
	KindExists   EventKind = "exists"
	KindCreate   EventKind = "create"
	KindChange   EventKind = "change"
	KindDestroy  EventKind = "destroy"
	KindCall     EventKind = "call"
	KindResponse EventKind = "response"
	KindRename   EventKind = "rename"
)

// ObjectType is the second word of an events2 line.
type ObjectType string

// Object types printed by drbdsetup events2. ObjectNone is used by the
// "exists -" marker that ends the initial state dump.
const (
	ObjectNone       ObjectType = "-"
	ObjectResource   ObjectType = "resource"
	ObjectConnection ObjectType = "connection"
	ObjectDevice     ObjectType = "device"
	ObjectPeerDevice ObjectType = "peer-device"
	ObjectPath       ObjectType = "path"
	ObjectHelper     ObjectType = "helper"
)

// Field is a bit set recording which optional fields a line carried.
// events2 only prints what changed (unless --full), so "absent" and
// "zero" must stay distinguishable.
type Field uint64

// Field bits; names follow the events2 keys.
const (
	FieldPeerNodeID Field = 1 << iota
	FieldVolume
	FieldMinor
	FieldRole
	FieldSuspended
	FieldConnection
	FieldPeerRole
	FieldDisk
	FieldPeerDisk
	FieldReplication
	FieldQuorum
	FieldMayPromote
	FieldPromotionScore
	FieldDone
	FieldOutOfSync
	FieldReceived
	FieldSent
	FieldPending
	FieldUnacked
	FieldRead
	FieldWritten
	FieldSize
	FieldALWrites
	FieldBMWrites
	FieldUpperPending
	FieldLowerPending
	FieldAPInFlight
	FieldRSInFlight
	FieldCongested
	FieldEstablished
	FieldClient
	FieldPeerClient
	FieldOpen
)

// Event is one parsed events2 line. String fields are sub-slices of the
// input line (no copies); numeric fields are only meaningful when the
// matching Field bit is set in Fields.
type Event struct {
	Timestamp string // as printed with --timestamps, else ""
	Kind      EventKind
	Object    ObjectType

	Resource   string // name:
	NewName    string // new_name: (rename)
	PeerNodeID int    // peer-node-id:
	ConnName   string // conn-name:
	Volume     int    // volume:
	Minor      int    // minor:

	Role        string // role: of a resource
	Suspended   string // suspended: "no", "user", "quorum", ...
	Connection  string // connection: (connection state)
	PeerRole    string // role: of a connection
	Disk        string // disk:
	PeerDisk    string // peer-disk:
	Replication string // replication:
	BackingDev  string // backing_dev:
	Local, Peer string // path endpoints, e.g. ipv4:10.0.0.1:7000
	Helper      string // helper:

	Quorum, MayPromote, Congested, Established bool
	Client, PeerClient, Open                   bool
	PromotionScore                             int
	Done                                       float64 // resync percent

	// Counters in KiB (sizes/traffic) or requests, as printed.
	OutOfSync, Received, Sent, Pending, Unacked uint64
	Read, Written, Size, ALWrites, BMWrites     uint64
	UpperPending, LowerPending                  uint64
	APInFlight, RSInFlight                      uint64

	Fields Field
}

// Has reports whether the line carried field f.
func (e *Event) Has(f Field) bool { return e.Fields&f != 0 }

// IsInitialDone reports the "exists -" marker that ends the initial dump.
func (e *Event) IsInitialDone() bool { return e.Kind == KindExists && e.Object == ObjectNone }

var errEmptyLine = errors.New("events2: empty line")

// ParseEvent parses one line of `drbdsetup events2 [--full] [--statistics]
// [--timestamps]` output. Unknown keys are ignored so newer drbd-utils
// keep working; structurally broken lines return an error.
func ParseEvent(line string) (Event, error) {
	ev := Event{PeerNodeID: -1, Volume: -1, Minor: -1}
	rest := strings.TrimRight(line, " \t\r\n")
	word, rest := nextWord(rest)
	if word == "" {
		return ev, errEmptyLine
	}
	if word[0] >= '0' && word[0] <= '9' {
		ev.Timestamp = word
		word, rest = nextWord(rest)
	}
	switch k := EventKind(word); k {
	case KindExists, KindCreate, KindChange, KindDestroy, KindCall, KindResponse, KindRename:
		ev.Kind = k
	default:
		return ev, fmt.Errorf("events2: unknown event kind %q", word)
	}
	word, rest = nextWord(rest)
	switch o := ObjectType(word); o {
	case ObjectNone:
		ev.Object = o
		if w, _ := nextWord(rest); w != "" {
			return ev, fmt.Errorf("events2: trailing data after %q marker", word)
		}
		return ev, nil
	case ObjectResource, ObjectConnection, ObjectDevice, ObjectPeerDevice, ObjectPath, ObjectHelper:
		ev.Object = o
	case "":
		return ev, errors.New("events2: missing object type")
	default:
		return ev, fmt.Errorf("events2: unknown object type %q", word)
	}
	for {
		word, rest = nextWord(rest)
		if word == "" {
			break
		}
		i := strings.IndexByte(word, ':')
		if i <= 0 {
			return ev, fmt.Errorf("events2: malformed field %q", word)
		}
		if err := ev.setField(word[:i], word[i+1:]); err != nil {
			return ev, err
		}
	}
	if ev.Resource == "" {
		return ev, fmt.Errorf("events2: %s line without name", ev.Object)
	}
	return ev, nil
}

// nextWord splits off the next space-separated word without allocating.
func nextWord(s string) (word, rest string) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	s = s[i:]
	j := 0
	for j < len(s) && s[j] != ' ' && s[j] != '\t' {
		j++
	}
	return s[:j], s[j:]
}
