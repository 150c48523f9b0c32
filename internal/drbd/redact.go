package drbd

import "regexp"

// redacted replaces a shared secret in anything the agent may show.
const redacted = "<redacted>"

// secretInText finds a shared secret as drbdadm shows it: in a drbdsetup
// command line it runs or reports as failed ("--shared-secret=..."), and in
// a configuration it echoes ("shared-secret "..."").
var secretInText = regexp.MustCompile(`(--shared-secret[= ]|shared-secret\s+)("[^"]*"|[^\s;']+)`)

// Redact removes shared secrets from a command line or command output, so an
// error that reaches a log, an event or a condition never carries one.
func Redact(s string) string { return secretInText.ReplaceAllString(s, "${1}"+redacted) }
