package server

import (
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// placeholder is served when the binary was built without the front end
// (a clean clone before `make console`).
const placeholder = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>siterecovery console</title></head>
<body><h1>siterecovery console</h1><p>This binary was built without its front end. Run <code>make console</code>
and build again; the API under /api/ works regardless.</p></body></html>`

// static serves the built front end: files as they are, and index.html for
// every other path so that the page's own routes survive a reload.
func (s *Server) static() http.Handler {
	ui := s.opts.UI
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if ui == nil {
			servePlaceholder(w)
			return
		}
		name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
		if name != "" && name != "index.html" {
			if st, err := fs.Stat(ui, name); err == nil && !st.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					// Vite names assets by their content hash.
					w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
				}
				http.ServeFileFS(w, r, ui, name)
				return
			}
		}
		b, err := fs.ReadFile(ui, "index.html")
		if err != nil {
			servePlaceholder(w)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(b)
	})
}

func servePlaceholder(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write([]byte(placeholder))
}
