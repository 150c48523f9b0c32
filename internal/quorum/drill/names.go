package drill

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// slotFormat renders a slot in a name: minutes are the schedule's grain.
const slotFormat = "200601021504"

// maxName is the longest TestFailover name the drill uses: a DNS label, so
// that it fits the labels and Jobs the test-failover controller derives from it.
const maxName = 63

// Name is the TestFailover of group's drill for slot: the same on every
// retry, so that a retry after a crash finds the one already created.
func Name(group string, slot time.Time) string {
	suffix := "-drill-" + slot.UTC().Format(slotFormat)
	return shorten(group, maxName-len(suffix)) + suffix
}

// IsolatedNamespace is the namespace on the target cluster where the drill of
// slot runs its test VMs: "sr-drill-<group>-<slot>", a DNS label.
func IsolatedNamespace(group string, slot time.Time) string {
	suffix := "-" + slot.UTC().Format(slotFormat)
	return "sr-drill-" + shorten(strings.ReplaceAll(group, ".", "-"), maxName-len("sr-drill-")-len(suffix)) + suffix
}

// shorten keeps s when it fits in n characters, otherwise a prefix and a hash
// of the whole, so that two long names never shorten to the same one.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:4])
	return strings.TrimRight(s[:n-len(h)-1], "-.") + "-" + h
}
