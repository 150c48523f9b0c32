package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestManualDrillNames: a manual drill's name and isolated namespace are DNS
// labels for any group name, and never have the shape of a scheduled drill's
// name ("<group>-drill-" and twelve digits), whatever the group is called.
func TestManualDrillNames(t *testing.T) {
	scheduled := regexp.MustCompile(`-drill-\d{12}$`)
	long := strings.Repeat("a", 60) + ".b"
	for _, g := range []string{"db", "x-drill-manual", "db-drill-2026", long, long + "c"} {
		name := manualDrillName(g, "20261206163005")
		assert.Empty(t, validation.IsDNS1123Label(name), name)
		assert.False(t, scheduled.MatchString(name), name)
		assert.Empty(t, validation.IsDNS1123Label(manualIsolatedNamespace(g, "20261206163005")), g)
	}
	assert.Equal(t, "db-drill-manual-20261206163005", manualDrillName("db", "20261206163005"))
	assert.NotEqual(t, manualDrillName(long, "20261206163005"), manualDrillName(long+"c", "20261206163005"), "long names shorten apart")
}
