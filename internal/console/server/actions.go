package server

import (
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

type preflightCheck struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	// Unknown is true when the check could not be made (the user may not
	// read what it needs, or a site did not answer); Message says why.
	Unknown bool   `json:"unknown,omitempty"`
	Message string `json:"message"`
}

type preflightView struct {
	Target string           `json:"target"`
	Checks []preflightCheck `json:"checks"`
	// Passed is true when every check passed; a planned failover may still
	// be requested otherwise, and the controller refuses what is unsafe.
	Passed bool `json:"passed"`
	// DataLossSeconds is the window of writes an unplanned failover may lose:
	// the current replication lag.
	DataLossSeconds *int64 `json:"dataLossSeconds,omitempty"`
}

// preflight shows, before a failover is confirmed, what the controller will
// check: the zone's clusters are reachable, replication is in sync, no other
// request holds the group's lock, and no lost-quorum taint on the target's
// replica nodes would hold it (read from the target, for users who may).
func (s *Server) preflight(w http.ResponseWriter, r request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	d, ok := s.groupDetail(w, r, ns, name)
	if !ok {
		return
	}
	target := r.URL.Query().Get("target")
	if target == "" {
		for _, c := range d.Group.Clusters {
			if c != d.Group.ActiveCluster {
				target = c
			}
		}
		if target == "" && d.Zone != nil {
			for _, c := range d.Zone.Clusters {
				if c.Name != d.Group.ActiveCluster {
					target = c.Name
				}
			}
		}
	}
	p := preflightView{Target: target, DataLossSeconds: d.Group.LagSeconds}
	if d.Zone == nil {
		p.Checks = append(p.Checks, preflightCheck{Name: "Reachability", Message: "the group's zone is not visible to you"})
	} else {
		var down []string
		for _, c := range d.Zone.Clusters {
			if c.Reachable == nil || !*c.Reachable {
				down = append(down, c.Name)
			}
		}
		msg := "every cluster of the zone answers"
		if down != nil {
			msg = "not reachable: " + strings.Join(down, ", ")
		}
		p.Checks = append(p.Checks, preflightCheck{Name: "Reachability", Passed: down == nil, Message: msg})
	}
	sync := preflightCheck{Name: "Replication in sync", Passed: d.Group.FailoverReady,
		Message: fmt.Sprintf("replication health %s", d.Group.Health)}
	if d.Group.LagSeconds != nil {
		sync.Message += fmt.Sprintf(", lag %d s", *d.Group.LagSeconds)
	}
	p.Checks = append(p.Checks, sync)
	lock := preflightCheck{Name: "Failover lock", Passed: true, Message: "free"}
	for _, o := range d.Operations {
		if o.Kind == "FailoverRequest" && !o.Finished {
			lock = preflightCheck{Name: "Failover lock", Message: "held by " + o.Name + " (" + o.Phase + ")"}
		}
		if o.Kind == "TestFailover" && !o.Finished {
			lock = preflightCheck{Name: "Failover lock", Message: "a test failover is running: " + o.Name}
		}
	}
	p.Checks = append(p.Checks, lock, s.taintCheck(r.Context(), r, d.zone, name, target))
	p.Passed = true
	for _, c := range p.Checks {
		p.Passed = p.Passed && c.Passed
	}
	writeJSON(w, http.StatusOK, p)
}

type failoverBody struct {
	Group         string `json:"group"`
	TargetCluster string `json:"targetCluster"`
	Type          string `json:"type"`
	Force         bool   `json:"force,omitempty"`
	// Confirm is the group's name typed by the user; an unplanned or forced
	// failover needs it.
	Confirm string `json:"confirm,omitempty"`
}

func (s *Server) createFailover(w http.ResponseWriter, r request) {
	ns := r.PathValue("ns")
	var b failoverBody
	if err := readJSON(r.Request, &b); err != nil {
		badRequest(w, "invalid body: "+err.Error())
		return
	}
	typ := srv1alpha1.FailoverType(b.Type)
	if typ != srv1alpha1.FailoverPlanned && typ != srv1alpha1.FailoverUnplanned {
		badRequest(w, "type must be planned or unplanned")
		return
	}
	if b.Group == "" || b.TargetCluster == "" {
		badRequest(w, "group and targetCluster are required")
		return
	}
	fr := &srv1alpha1.FailoverRequest{
		ObjectMeta: s.requestMeta(r, ns, b.Group),
		Spec: srv1alpha1.FailoverRequestSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: b.Group, Namespace: ns},
			TargetCluster:      b.TargetCluster, FailoverType: typ, Force: b.Force,
		},
	}
	if typ == srv1alpha1.FailoverUnplanned || b.Force {
		if b.Confirm != b.Group {
			badRequest(w, "type the group's name to confirm an unplanned or forced failover")
			return
		}
		fr.Annotations[srv1alpha1.ConfirmAnnotation] = b.Confirm
	}
	s.create(w, r, "failover "+string(typ), fr)
}

type testFailoverBody struct {
	Group         string `json:"group"`
	TargetCluster string `json:"targetCluster"`
}

func (s *Server) createTestFailover(w http.ResponseWriter, r request) {
	ns := r.PathValue("ns")
	var b testFailoverBody
	if err := readJSON(r.Request, &b); err != nil {
		badRequest(w, "invalid body: "+err.Error())
		return
	}
	if b.Group == "" || b.TargetCluster == "" {
		badRequest(w, "group and targetCluster are required")
		return
	}
	tf := &srv1alpha1.TestFailover{
		ObjectMeta: s.requestMeta(r, ns, b.Group),
		Spec: srv1alpha1.TestFailoverSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: b.Group, Namespace: ns},
			TargetCluster:      b.TargetCluster,
		},
	}
	s.create(w, r, "test failover", tf)
}

type protectBody struct {
	VMName        string `json:"vmName"`
	VMNamespace   string `json:"vmNamespace"`
	Zone          string `json:"zone"`
	Group         string `json:"group"`
	TargetCluster string `json:"targetCluster,omitempty"`
}

func (s *Server) createProtection(w http.ResponseWriter, r request) {
	ns := r.PathValue("ns")
	var b protectBody
	if err := readJSON(r.Request, &b); err != nil {
		badRequest(w, "invalid body: "+err.Error())
		return
	}
	if b.VMName == "" || b.VMNamespace == "" || b.Zone == "" || b.Group == "" {
		badRequest(w, "vmName, vmNamespace, zone and group are required")
		return
	}
	pr := &srv1alpha1.ProtectionRequest{
		ObjectMeta: s.requestMeta(r, ns, b.VMName),
		Spec: srv1alpha1.ProtectionRequestSpec{
			VirtualMachine:     srv1alpha1.VirtualMachineReference{Name: b.VMName, Namespace: b.VMNamespace},
			ZoneRef:            srv1alpha1.LocalObjectReference{Name: b.Zone},
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: b.Group, Namespace: ns},
			TargetCluster:      b.TargetCluster,
		},
	}
	s.create(w, r, "protect", pr)
}

// requestMeta names a new request after what it acts on, and records who
// asked for it.
func (s *Server) requestMeta(r request, ns, base string) metav1.ObjectMeta {
	prefix := base
	if len(prefix) > validation.DNS1123SubdomainMaxLength-10 {
		prefix = prefix[:validation.DNS1123SubdomainMaxLength-10]
	}
	return metav1.ObjectMeta{Namespace: ns, GenerateName: strings.TrimSuffix(prefix, "-") + "-",
		Annotations: map[string]string{requestedByAnnotation: r.user()}}
}

// create makes obj with the user's credentials: RBAC and the admission
// webhooks decide, and their answer goes back to the browser as it came.
func (s *Server) create(w http.ResponseWriter, r request, action string, obj client.Object) {
	err := r.client.Create(r.Context(), obj, client.FieldOwner(fieldOwner))
	ns := obj.GetNamespace()
	if err != nil {
		e := toAPIError(err)
		s.audit.record(r.Request, r.user(), action, ns, obj.GetGenerateName(), e.Code, e.Message)
		writeJSON(w, e.Code, e)
		return
	}
	s.audit.record(r.Request, r.user(), action, ns, obj.GetName(), http.StatusCreated, "created")
	writeJSON(w, http.StatusCreated, map[string]string{"namespace": ns, "name": obj.GetName()})
}

func badRequest(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, apiError{Code: http.StatusBadRequest, Message: msg})
}
