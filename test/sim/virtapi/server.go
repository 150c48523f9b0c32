package virtapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/sim/guest"
)

// Group and Version are those virt-api serves its subresources under.
const (
	Group   = "subresources.kubevirt.io"
	Version = "v1"
)

// frozenStatus is the value virt-handler copies into status.fsFreezeStatus
// from the guest agent (pkg/virt-handler/vm.go; api.FSFrozen).
const frozenStatus = "frozen"

// handler serves the subresources of one cluster.
type handler struct {
	client client.Client
	guests *guest.Guests

	mu sync.Mutex
	// safety are the pending self-thaws of frozen guests.
	safety map[types.NamespacedName]*time.Timer
	// calls counts the freeze and unfreeze calls served, per action.
	calls map[string]int
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// virt-api trusts the API server's front proxy only (tls config), and
	// then the user the proxy authenticated.
	if r.Header.Get("X-Remote-User") == "" {
		writeStatus(w, apierrors.NewUnauthorized("no X-Remote-User from the front proxy"))
		return
	}
	prefix := "/apis/" + Group + "/" + Version
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodGet && path == prefix:
		writeJSON(w, http.StatusOK, discovery())
		return
	case r.Method == http.MethodGet && (path == "/apis/"+Group || path == "/apis"):
		writeJSON(w, http.StatusOK, metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: Group,
			Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: Group + "/" + Version, Version: Version}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: Group + "/" + Version, Version: Version}})
		return
	}
	// namespaces/<ns>/virtualmachineinstances/<name>/<action>
	parts := strings.Split(strings.TrimPrefix(path, prefix+"/"), "/")
	if r.Method != http.MethodPut || len(parts) != 5 || parts[0] != "namespaces" || parts[2] != "virtualmachineinstances" {
		writeStatus(w, apierrors.NewNotFound(kubevirtv1.Resource("virtualmachineinstances"), path))
		return
	}
	vm := types.NamespacedName{Namespace: parts[1], Name: parts[3]}
	h.count(parts[4])
	if err := h.authorize(r.Context(), r, vm, parts[4]); err != nil {
		writeStatus(w, err)
		return
	}
	var err error
	switch parts[4] {
	case "freeze":
		err = h.freeze(r.Context(), vm, r.Body)
	case "unfreeze":
		err = h.unfreeze(r.Context(), vm)
	default:
		err = apierrors.NewNotFound(kubevirtv1.Resource("virtualmachineinstances/"+parts[4]), vm.Name)
	}
	if err != nil {
		writeStatus(w, err)
		return
	}
	// putRequestHandler writes no body on success (pkg/virt-api/rest/subresource.go).
	w.WriteHeader(http.StatusOK)
}

// running is the validation of FreezeVMIRequestHandler and
// UnfreezeVMIRequestHandler (pkg/virt-api/rest/lifecycle.go) after the fetch
// of FetchVirtualMachineInstance (pkg/virt-api/rest/subresource.go).
func (h *handler) running(ctx context.Context, vm types.NamespacedName) error {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := h.client.Get(ctx, vm, vmi); err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewNotFound(kubevirtv1.Resource("virtualmachineinstance"), vm.Name)
		}
		return apierrors.NewInternalError(fmt.Errorf("unable to retrieve vmi [%s]: %w", vm.Name, err))
	}
	if vmi.Status.Phase != kubevirtv1.Running {
		return apierrors.NewConflict(kubevirtv1.Resource("virtualmachineinstance"), vm.Name, errors.New("VM is not running"))
	}
	return nil
}

// freeze follows virt-handler's FreezeHandler (pkg/virt-handler/rest/lifecycle.go):
// a body with unfreezeTimeout is required; the launcher freezes through the
// agent and schedules its own thaw (scheduleSafetyVMIUnfreeze,
// pkg/virt-launcher/virtwrap/storage/fsfreeze.go). virt-handler's refusals
// reach the caller as virt-api's internal errors (putRequestHandler).
func (h *handler) freeze(ctx context.Context, vm types.NamespacedName, body io.Reader) error {
	if err := h.running(ctx, vm); err != nil {
		return err
	}
	var timeout kubevirtv1.FreezeUnfreezeTimeout
	if err := json.NewDecoder(io.LimitReader(body, 1024)).Decode(&timeout); err != nil && !errors.Is(err, io.EOF) {
		return apierrors.NewInternalError(errors.New("failed to unmarshal unfreeze timeout"))
	}
	if timeout.UnfreezeTimeout == nil {
		return apierrors.NewInternalError(errors.New("Unfreeze timeout in freeze request is not set")) //nolint:staticcheck // virt-handler's words
	}
	if err := h.guests.Freeze(vm); err != nil {
		return apierrors.NewInternalError(err)
	}
	h.mu.Lock()
	if t := h.safety[vm]; t != nil {
		t.Stop()
		delete(h.safety, vm)
	}
	if d := timeout.UnfreezeTimeout.Duration; d > 0 {
		var t *time.Timer
		t = time.AfterFunc(d, func() {
			h.mu.Lock()
			mine := h.safety[vm] == t
			h.mu.Unlock()
			if mine {
				_ = h.unfreeze(context.Background(), vm)
			}
		})
		h.safety[vm] = t
	}
	h.mu.Unlock()
	return h.setStatus(ctx, vm, frozenStatus)
}

// unfreeze follows UnfreezeHandler (pkg/virt-handler/rest/lifecycle.go) and
// UnfreezeVMI (pkg/virt-launcher/virtwrap/storage/fsfreeze.go): it cancels
// the self-thaw and thaws through the agent.
func (h *handler) unfreeze(ctx context.Context, vm types.NamespacedName) error {
	if err := h.running(ctx, vm); err != nil {
		return err
	}
	h.mu.Lock()
	if t := h.safety[vm]; t != nil {
		t.Stop()
		delete(h.safety, vm)
	}
	h.mu.Unlock()
	if err := h.guests.Thaw(vm); err != nil {
		return apierrors.NewInternalError(err)
	}
	return h.setStatus(ctx, vm, "")
}

// setStatus writes status.fsFreezeStatus as virt-handler does from the
// domain's status (pkg/virt-handler/vm.go).
func (h *handler) setStatus(ctx context.Context, vm types.NamespacedName, status string) error {
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := h.client.Get(ctx, vm, vmi); err != nil {
		return apierrors.NewInternalError(err)
	}
	if vmi.Status.FSFreezeStatus == status {
		return nil
	}
	patched := vmi.DeepCopy()
	patched.Status.FSFreezeStatus = status
	// KubeVirt's VMI CRD has no status subresource: status is written with
	// the object.
	if err := h.client.Patch(ctx, patched, client.MergeFrom(vmi)); err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}

func (h *handler) count(action string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[action]++
}

func (h *handler) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.safety {
		t.Stop()
	}
}

// discovery lists the subresources served here, as virt-api's do
// (pkg/virt-api/api.go).
func discovery() metav1.APIResourceList {
	l := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: Group + "/" + Version}
	for _, r := range []string{"virtualmachineinstances/freeze", "virtualmachineinstances/unfreeze"} {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r, Namespaced: true, Kind: "VirtualMachineInstance", Verbs: metav1.Verbs{"update"}})
	}
	return l
}

func writeStatus(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	s := se.Status()
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(w, int(s.Code), s)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
