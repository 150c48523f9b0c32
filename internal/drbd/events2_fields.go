package drbd

import (
	"fmt"
	"math"
	"strconv"
)

// setField stores one key:value pair. A switch on the key keeps this
// allocation-free; unknown keys are skipped on purpose (forward compat).
func (e *Event) setField(key, val string) error {
	var err error
	switch key {
	case "name":
		e.Resource = val
	case "new_name":
		e.NewName = val
	case "conn-name":
		e.ConnName = val
	case "peer-node-id":
		e.PeerNodeID, err = e.intField(FieldPeerNodeID, key, val)
	case "volume":
		e.Volume, err = e.intField(FieldVolume, key, val)
	case "minor":
		e.Minor, err = e.intField(FieldMinor, key, val)
	case "role":
		// Same key, different meaning: on a connection it is the peer's role.
		if e.Object == ObjectConnection {
			e.PeerRole = val
			e.Fields |= FieldPeerRole
		} else {
			e.Role = val
			e.Fields |= FieldRole
		}
	case "suspended":
		e.Suspended = val
		e.Fields |= FieldSuspended
	case "connection":
		e.Connection = val
		e.Fields |= FieldConnection
	case "disk":
		e.Disk = val
		e.Fields |= FieldDisk
	case "peer-disk":
		e.PeerDisk = val
		e.Fields |= FieldPeerDisk
	case "replication":
		e.Replication = val
		e.Fields |= FieldReplication
	case "backing_dev":
		e.BackingDev = val
	case "local":
		e.Local = val
	case "peer":
		e.Peer = val
	case "helper":
		e.Helper = val
	case "quorum":
		e.Quorum, err = e.boolField(FieldQuorum, key, val)
	case "may_promote":
		e.MayPromote, err = e.boolField(FieldMayPromote, key, val)
	case "congested":
		e.Congested, err = e.boolField(FieldCongested, key, val)
	case "established":
		e.Established, err = e.boolField(FieldEstablished, key, val)
	case "client":
		e.Client, err = e.boolField(FieldClient, key, val)
	case "peer-client":
		e.PeerClient, err = e.boolField(FieldPeerClient, key, val)
	case "open":
		e.Open, err = e.boolField(FieldOpen, key, val)
	case "promotion_score":
		e.PromotionScore, err = e.intField(FieldPromotionScore, key, val)
	case "done":
		e.Done, err = strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(e.Done) || math.IsInf(e.Done, 0) {
			return fmt.Errorf("events2: bad %s value %q", key, val)
		}
		e.Fields |= FieldDone
	default:
		return e.counterField(key, val)
	}
	return err
}

func (e *Event) counterField(key, val string) error {
	var dst *uint64
	var f Field
	switch key {
	case "out-of-sync":
		dst, f = &e.OutOfSync, FieldOutOfSync
	case "received":
		dst, f = &e.Received, FieldReceived
	case "sent":
		dst, f = &e.Sent, FieldSent
	case "pending":
		dst, f = &e.Pending, FieldPending
	case "unacked":
		dst, f = &e.Unacked, FieldUnacked
	case "read":
		dst, f = &e.Read, FieldRead
	case "written":
		dst, f = &e.Written, FieldWritten
	case "size":
		dst, f = &e.Size, FieldSize
	case "al-writes":
		dst, f = &e.ALWrites, FieldALWrites
	case "bm-writes":
		dst, f = &e.BMWrites, FieldBMWrites
	case "upper-pending":
		dst, f = &e.UpperPending, FieldUpperPending
	case "lower-pending":
		dst, f = &e.LowerPending, FieldLowerPending
	case "ap-in-flight":
		dst, f = &e.APInFlight, FieldAPInFlight
	case "rs-in-flight":
		dst, f = &e.RSInFlight, FieldRSInFlight
	default:
		return nil // unknown key: ignored
	}
	v, ok := parseUint64(val)
	if !ok {
		return fmt.Errorf("events2: bad %s value %q", key, val)
	}
	*dst = v
	e.Fields |= f
	return nil
}

func (e *Event) intField(f Field, key, val string) (int, error) {
	neg := val != "" && val[0] == '-'
	if neg {
		val = val[1:]
	}
	v, ok := parseUint64(val)
	if !ok || v > math.MaxInt32 {
		return -1, fmt.Errorf("events2: bad %s value %q", key, val)
	}
	e.Fields |= f
	if neg {
		return -int(v), nil
	}
	return int(v), nil
}

func (e *Event) boolField(f Field, key, val string) (bool, error) {
	switch val {
	case "yes", "true":
		e.Fields |= f
		return true, nil
	case "no", "false":
		e.Fields |= f
		return false, nil
	}
	return false, fmt.Errorf("events2: bad %s value %q", key, val)
}

// parseUint64 is a strict decimal parser; strconv would also do, but this
// avoids building *NumError values on the hot path.
func parseUint64(s string) (uint64, bool) {
	if s == "" || len(s) > 20 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
