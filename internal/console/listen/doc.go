// Package listen decides how the console is served. HTTPS is the default:
// with the operator's certificate when one is given, otherwise with an ECDSA
// P-256 certificate generated in memory at start for the console's own
// names. Plain HTTP is served only when asked for explicitly, either behind a
// proxy that terminates TLS (the browser still speaks HTTPS, so the session
// cookie stays Secure) or insecurely, for a test cluster, where bearer tokens
// cross the network in clear text.
package listen
