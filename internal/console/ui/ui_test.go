package ui

import (
	"io/fs"
	"regexp"
	"testing"
)

// The built page must run under the console's CSP: every script is a file of
// its own (no inline script) and nothing is loaded from another origin.
func TestBuiltPageHasNoInlineScript(t *testing.T) {
	ui := FS()
	if ui == nil {
		t.Skip("the front end is not built (make console)")
	}
	b, err := fs.ReadFile(ui, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(b), -1) {
		if !regexp.MustCompile(`src="/assets/`).MatchString(tag) {
			t.Errorf("script without a same-origin src: %s", tag)
		}
	}
	if regexp.MustCompile(`(src|href)="(https?:)?//`).Match(b) {
		t.Errorf("index.html loads from another origin:\n%s", b)
	}
}
