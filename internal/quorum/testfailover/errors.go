package testfailover

import (
	"errors"
	"fmt"
)

// InvalidError is a problem with the request or the group that retrying cannot
// fix: the test fails at once with Reason on its Ready condition.
type InvalidError struct {
	Reason  string
	Message string
}

func (e *InvalidError) Error() string { return e.Message }

func invalid(reason, format string, args ...any) error {
	return &InvalidError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// asInvalid reports whether err is (or wraps) an InvalidError.
func asInvalid(err error) (*InvalidError, bool) {
	var ie *InvalidError
	ok := errors.As(err, &ie)
	return ie, ok
}

// UnreachableError is a DR cluster that cannot be reached now; the phase retries.
type UnreachableError struct {
	Cluster string
	Err     error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach DR cluster %s: %v", e.Cluster, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }
