// Package server is the console's HTTP backend. It holds no privileged
// identity: a user signs in with a bearer token the quorum API server accepts,
// and every read, write and watch the console makes for that user goes to the
// API server with that token, so Kubernetes RBAC and the admission webhooks
// decide what the user sees and may do. The token lives only in the
// server-side session; the browser holds an opaque session id in an HttpOnly,
// SameSite=Strict cookie and sends a per-session CSRF token with every write.
package server
