// Package ui embeds the console's built front end. `make console` builds it
// into dist/; a clone that has not run it embeds only dist/.gitkeep, and the
// server then serves a page that says to run `make console`.
package ui

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// FS returns the built front end, or nil when the binary was built without it.
func FS() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil
	}
	if _, err := fs.Stat(sub, "index.html"); err != nil {
		return nil
	}
	return sub
}
