package flow

import (
	"fmt"
	"strings"
)

// listedMost is how many names a message lists before it counts the rest.
const listedMost = 10

// Listed joins names for a message, the first ten of them in a longer list
// and the count of the rest ("a, b, ... and 190 more"). A message that waits
// on a group's VMs or replicas names them, and a status message is rewritten
// as the wait goes on: every name of a 200-VM group in each write made the
// status large to store and to send to every watcher, and the message
// unreadable. The objects' own status says which of them are behind.
func Listed(names []string) string {
	return ListedWith(names, ", ")
}

// ListedWith is Listed with another separator.
func ListedWith(names []string, sep string) string {
	if len(names) <= listedMost {
		return strings.Join(names, sep)
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:listedMost], sep), len(names)-listedMost)
}
