package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/siterecovery/siterecovery/test/sim/guest"
)

type fakeGuests struct {
	writeErr, verifyErr error
	wrote               []string
}

func (g *fakeGuests) Known(cluster string) bool { return cluster == primary || cluster == dr }

func (g *fakeGuests) Write(_ context.Context, cluster string, vm types.NamespacedName, blocks int) (guest.Ack, error) {
	if g.writeErr != nil {
		return guest.Ack{}, g.writeErr
	}
	g.wrote = append(g.wrote, fmt.Sprintf("%s %s %d", cluster, vm, blocks))
	return guest.Ack{Acknowledged: blocks, LastSeq: 100 + uint64(blocks)}, nil
}

func (g *fakeGuests) Verify(context.Context, string, types.NamespacedName) (guest.Result, error) {
	if g.verifyErr != nil {
		return guest.Result{}, g.verifyErr
	}
	return guest.Result{Acknowledged: 3, Intact: 2, Lost: 1, Disks: []guest.DiskSum{{Name: "rootdisk", Checksum: "sha256:ab"}}}, nil
}

type fakeFaults struct{ calls []string }

func (f *fakeFaults) Known(cluster string) bool { return cluster == primary || cluster == dr }
func (f *fakeFaults) Links(cluster string, cut bool) error {
	f.calls = append(f.calls, fmt.Sprintf("links %s %v", cluster, cut))
	return nil
}
func (f *fakeFaults) PowerOff(cluster string) error {
	f.calls = append(f.calls, "power-off "+cluster)
	return nil
}
func (f *fakeFaults) Partition(cluster string) error {
	f.calls = append(f.calls, "partition "+cluster)
	return nil
}
func (f *fakeFaults) Heal() error { f.calls = append(f.calls, "heal"); return nil }

func call(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: answer %d is not a JSON object: %q", method, path, rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return rec.Code, out
}

func wantReason(t *testing.T, what string, code, want int, out map[string]any) {
	t.Helper()
	if code != want {
		t.Errorf("%s: status %d, want %d (%v)", what, code, want, out)
	}
	if r, _ := out["reason"].(string); r == "" {
		t.Errorf("%s: no reason in %v", what, out)
	}
}

func TestControlWrite(t *testing.T) {
	g := &fakeGuests{}
	h := controlHandler(g, &fakeFaults{})
	code, out := call(t, h, "POST", "/v1/guests/primary/demo-apps/vm-1/write", `{"blocks": 64}`)
	if code != http.StatusOK || out["acknowledged"] != 64.0 || out["lastSeq"] != 164.0 || len(out) != 2 {
		t.Errorf("write: %d %v", code, out)
	}
	if len(g.wrote) != 1 || g.wrote[0] != "primary demo-apps/vm-1 64" {
		t.Errorf("guest got %v", g.wrote)
	}
	for _, body := range []string{`{"blocks": 0}`, `{"blocks": 100001}`, `{}`, `{"blocks": "x"}`, `not json`, `{"blocks": 1, "extra": 1}`} {
		code, out := call(t, h, "POST", "/v1/guests/primary/demo-apps/vm-1/write", body)
		wantReason(t, "write "+body, code, http.StatusBadRequest, out)
	}
	code, out = call(t, h, "POST", "/v1/guests/quorum/demo-apps/vm-1/write", `{"blocks": 1}`)
	wantReason(t, "unknown cluster", code, http.StatusNotFound, out)
	if len(g.wrote) != 1 {
		t.Errorf("refused writes reached the guest: %v", g.wrote)
	}
	for _, err := range []error{
		&guest.NotRunningError{Cluster: dr, VM: types.NamespacedName{Namespace: "demo-apps", Name: "vm-1"}, Reason: "no VirtualMachineInstance"},
		&guest.IOError{Cluster: primary, Disk: "rootdisk", Err: errors.New("no quorum")},
	} {
		g.writeErr = err
		code, out := call(t, h, "POST", "/v1/guests/dr/demo-apps/vm-1/write", `{"blocks": 1}`)
		wantReason(t, err.Error(), code, http.StatusConflict, out)
	}
	g.writeErr = errors.New("connection refused")
	code, out = call(t, h, "POST", "/v1/guests/dr/demo-apps/vm-1/write", `{"blocks": 1}`)
	wantReason(t, "API server down", code, http.StatusServiceUnavailable, out)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/guests/dr/demo-apps/vm-1/write", http.NoBody))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET write: %d", rec.Code)
	}
}

func TestControlVerify(t *testing.T) {
	g := &fakeGuests{}
	h := controlHandler(g, &fakeFaults{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/guests/dr/demo-apps/vm-2/verify", http.NoBody))
	want := `{"acknowledged":3,"intact":2,"lost":1,"corrupt":0,"disks":[{"name":"rootdisk","checksum":"sha256:ab"}]}`
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("verify: %d %s, want %s", rec.Code, rec.Body.String(), want)
	}
	code, out := call(t, h, "GET", "/v1/guests/elsewhere/demo-apps/vm-2/verify", "")
	wantReason(t, "unknown cluster", code, http.StatusNotFound, out)
	g.verifyErr = errors.New("read block 0: device is Secondary")
	code, out = call(t, h, "GET", "/v1/guests/primary/demo-apps/vm-2/verify", "")
	wantReason(t, "unreadable", code, http.StatusConflict, out)
	if r := out["reason"].(string); !strings.Contains(r, "Secondary") || !strings.Contains(r, "demo-apps/vm-2") {
		t.Errorf("reason %q", r)
	}
}

func TestControlVerifyEmptyDisks(t *testing.T) {
	h := controlHandler(&emptyGuests{}, &fakeFaults{})
	code, out := call(t, h, "GET", "/v1/guests/dr/demo-apps/vm-2/verify", "")
	if d, ok := out["disks"].([]any); code != http.StatusOK || !ok || len(d) != 0 {
		t.Errorf("verify: %d %v", code, out)
	}
}

type emptyGuests struct{ fakeGuests }

func (emptyGuests) Verify(context.Context, string, types.NamespacedName) (guest.Result, error) {
	return guest.Result{}, nil
}

func TestControlFaults(t *testing.T) {
	f := &fakeFaults{}
	h := controlHandler(&fakeGuests{}, f)
	for _, c := range []struct{ path, body string }{
		{"/v1/faults/links", `{"cluster": "primary", "cut": true}`},
		{"/v1/faults/links", `{"cluster": "dr", "cut": false}`},
		{"/v1/faults/power-off", `{"cluster": "primary"}`},
		{"/v1/faults/partition", `{"cluster": "dr"}`},
		{"/v1/faults/heal", ``},
	} {
		code, out := call(t, h, "POST", c.path, c.body)
		if code != http.StatusOK || len(out) != 0 {
			t.Errorf("%s %s: %d %v", c.path, c.body, code, out)
		}
	}
	want := []string{"links primary true", "links dr false", "power-off primary", "partition dr", "heal"}
	if fmt.Sprint(f.calls) != fmt.Sprint(want) {
		t.Errorf("calls %v, want %v", f.calls, want)
	}
	for _, c := range []struct {
		path, body string
		code       int
	}{
		{"/v1/faults/links", `{"cluster": "primary"}`, http.StatusBadRequest},
		{"/v1/faults/links", `{"cluster": "primary", "cut": "yes"}`, http.StatusBadRequest},
		{"/v1/faults/links", `{"cluster": "quorum", "cut": true}`, http.StatusNotFound},
		{"/v1/faults/power-off", `{"cluster": ""}`, http.StatusNotFound},
		{"/v1/faults/power-off", `{`, http.StatusBadRequest},
		{"/v1/faults/partition", `{"cluster": "nowhere"}`, http.StatusNotFound},
	} {
		code, out := call(t, h, "POST", c.path, c.body)
		wantReason(t, c.path+" "+c.body, code, c.code, out)
	}
	if len(f.calls) != len(want) {
		t.Errorf("refused faults were injected: %v", f.calls)
	}
}
