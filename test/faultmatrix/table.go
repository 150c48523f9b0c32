package faultmatrix

import (
	"fmt"
	"strings"
	"time"
)

// Row is what one cell of a matrix showed.
type Row struct {
	Flow, Fault string
	// Step is where the fault was to land; Landed where the flow was seen
	// when it did.
	Step, Landed string
	// Held is what the flow said while the fault lasted.
	Held    string
	Outcome string
	// Recovery is from the heal to the flow's end.
	Recovery time.Duration
}

// heldWidth bounds the quoted message, so that the table stays readable.
const heldWidth = 140

// Table renders rows as a Markdown table: flow × fault × step → outcome.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| flow | fault | step | landed in | while it lasted, the flow said | outcome | recovery after heal |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		held := r.Held
		if len([]rune(held)) > heldWidth {
			held = string([]rune(held)[:heldWidth]) + "…"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Flow, r.Fault, r.Step, r.Landed,
			strings.ReplaceAll(held, "|", "/"), r.Outcome, r.Recovery.Round(100*time.Millisecond))
	}
	return b.String()
}
