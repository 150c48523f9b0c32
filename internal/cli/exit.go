package cli

import (
	"errors"
	"fmt"
)

// Exit codes, documented in the root command's help. Scripts branch on them.
const (
	// ExitOK: the command did what was asked; validate found no problem.
	ExitOK = 0
	// ExitError: the command failed (API error, object not found, ...).
	ExitError = 1
	// ExitUsage: wrong arguments or flags.
	ExitUsage = 2
	// ExitProblems: validate found at least one problem.
	ExitProblems = 3
	// ExitRequestFailed: the request waited for ended Failed.
	ExitRequestFailed = 4
	// ExitStillRunning: waiting stopped (Ctrl-C or --timeout) before the request
	// ended; the request itself goes on.
	ExitStillRunning = 5
)

const exitCodesHelp = `Exit codes:
  0  success (validate: no problem; warnings allowed)
  1  error: the request could not be made or read
  2  usage error: wrong arguments or flags
  3  validate found at least one problem
  4  the request waited for ended Failed
  5  stopped waiting (Ctrl-C or --timeout) before the request ended; it goes on`

// CodeError carries an exit code with its error.
type CodeError struct {
	Code int
	Err  error
}

func (e *CodeError) Error() string { return e.Err.Error() }
func (e *CodeError) Unwrap() error { return e.Err }

func exitf(code int, format string, args ...any) error {
	return &CodeError{Code: code, Err: fmt.Errorf(format, args...)}
}

func usagef(format string, args ...any) error { return exitf(ExitUsage, format, args...) }

// Code is the process exit code for err.
func Code(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *CodeError
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitError
}
