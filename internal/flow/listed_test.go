package flow

import (
	"fmt"
	"testing"
)

func TestListed(t *testing.T) {
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("vm-%d", i)
		}
		return out
	}
	if got, want := Listed(names(3)), "vm-0, vm-1, vm-2"; got != want {
		t.Errorf("a short list is listed whole: %q, want %q", got, want)
	}
	if got, want := Listed(names(10)), "vm-0, vm-1, vm-2, vm-3, vm-4, vm-5, vm-6, vm-7, vm-8, vm-9"; got != want {
		t.Errorf("ten names are listed whole: %q, want %q", got, want)
	}
	if got, want := Listed(names(200)), "vm-0, vm-1, vm-2, vm-3, vm-4, vm-5, vm-6, vm-7, vm-8, vm-9 and 190 more"; got != want {
		t.Errorf("a long list counts the rest: %q, want %q", got, want)
	}
	if got, want := ListedWith(names(12), "; "), "vm-0; vm-1; vm-2; vm-3; vm-4; vm-5; vm-6; vm-7; vm-8; vm-9 and 2 more"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
