package gather

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/internal/cli/clusters"
)

// cloudInitSources are the volume sources of KubeVirt that carry the guest's
// own configuration inline (kubevirt.io/api/core/v1 CloudInitNoCloudSource,
// CloudInitConfigDriveSource): user data holds passwords, SSH keys and
// scripts, network data addresses and sometimes keys. Their secret
// references (userDataSecretRef, networkDataSecretRef), like sysprep's and
// accessCredentials', are only names, and stay.
var cloudInitSources = map[string]bool{"cloudInitNoCloud": true, "cloudInitConfigDrive": true}

// guestDataFields are the inline fields of a cloud-init source.
var guestDataFields = []string{"userData", "userDataBase64", "networkData", "networkDataBase64"}

// minGuestToken is the length from which a word of guest data (an SSH key, a
// password hash, an encoded blob) is replaced wherever it appears; shorter
// words are the structure every cloud-config shares.
const minGuestToken = 32

// redactGuestData replaces, anywhere in v (an object as JSON maps, so that a
// VM, a VMI and anything embedding their specs are covered), the inline
// cloud-init data by Redacted, keeping the field names, and does the same
// inside annotations holding JSON (kubectl's last-applied-configuration
// holds the whole spec). Each value replaced is recorded with red, so that a
// copy of it in an event or a log is replaced too. It reports whether
// anything was replaced.
func redactGuestData(v any, red *redactor) bool {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			m, isMap := child.(map[string]any)
			switch {
			case isMap && cloudInitSources[k]:
				changed = redactCloudInit(m, red) || changed
			case isMap && k == "annotations":
				changed = redactAnnotations(m, red) || changed
			default:
				changed = redactGuestData(child, red) || changed
			}
		}
	case []any:
		for _, c := range t {
			changed = redactGuestData(c, red) || changed
		}
	}
	return changed
}

func redactCloudInit(src map[string]any, red *redactor) bool {
	changed := false
	for _, f := range guestDataFields {
		s, ok := src[f].(string)
		if !ok || s == "" || s == Redacted {
			continue
		}
		red.addGuest(s, strings.HasSuffix(f, "Base64"))
		src[f] = Redacted
		changed = true
	}
	return changed
}

// redactAnnotations redacts guest data inside annotation values that are
// JSON; a value that holds guest data but does not parse is replaced whole.
func redactAnnotations(ann map[string]any, red *redactor) bool {
	changed := false
	for k, v := range ann {
		s, ok := v.(string)
		if !ok || !strings.ContainsAny(s, "{[") {
			continue
		}
		var parsed any
		if err := json.Unmarshal([]byte(s), &parsed); err != nil {
			if strings.Contains(s, "cloudInit") {
				ann[k] = Redacted
				changed = true
			}
			continue
		}
		if redactGuestData(parsed, red) {
			b, err := json.Marshal(parsed)
			if err != nil {
				ann[k] = Redacted
			} else {
				ann[k] = string(b)
			}
			changed = true
		}
	}
	return changed
}

// addGuest records a guest data value: as given, decoded when it is
// base64, and each long word of it.
func (r *redactor) addGuest(value string, isBase64 bool) {
	r.add([]byte(value))
	if isBase64 {
		if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(value)); err == nil {
			r.add(dec)
			value = string(dec)
		}
	}
	for _, w := range strings.Fields(value) {
		if w = strings.Trim(w, `"',`); len(w) >= minGuestToken {
			r.record(w)
		}
	}
}

// learnGuestData reads the VMs and VMIs of the namespaces on every usable
// cluster before any file is written, so that their guest data is known to
// the redactor for the files written before the VMs themselves (the quorum's
// events and logs). What cannot be read is noted when it is dumped.
func (g *gatherer) learnGuestData(ctx context.Context, conns []*clusters.Cluster, namespaces []string) {
	for _, cl := range conns {
		if !cl.Usable() {
			continue
		}
		for _, ns := range namespaces {
			for _, l := range []client.ObjectList{&kubevirtv1.VirtualMachineList{}, &kubevirtv1.VirtualMachineInstanceList{}} {
				if cl.Client.List(ctx, l, client.InNamespace(ns)) != nil {
					continue
				}
				if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l); err == nil {
					redactGuestData(u, g.b.red)
				}
			}
		}
	}
}
