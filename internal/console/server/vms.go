package server

import (
	"context"
	"errors"
	"net/http"
	"sort"

	kubevirtv1 "kubevirt.io/api/core/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// candidateVM is a VM of a zone's primary cluster, as the protect form lists it.
type candidateVM struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Group is the protection group the VM is already in, if any.
	Group string `json:"group,omitempty"`
}

type zoneVMsView struct {
	Cluster string `json:"cluster"`
	// Visible is false when the console may not read the cluster for this
	// user; Reason then says why.
	Visible bool          `json:"visible"`
	Reason  string        `json:"reason,omitempty"`
	VMs     []candidateVM `json:"vms"`
}

// zoneVMs lists the VMs of a zone's primary cluster for the protect form,
// each with the group that already protects it. Users who may not read the
// primary's kubeconfig Secret get the reason instead, and type the name.
func (s *Server) zoneVMs(w http.ResponseWriter, r request) {
	ns, name := r.PathValue("ns"), r.PathValue("zone")
	snap, err := s.read(r.Context(), r.client)
	if err != nil {
		e := toAPIError(err)
		writeJSON(w, e.Code, e)
		return
	}
	z := zoneNamed(snap, ns, name)
	if z == nil {
		writeJSON(w, http.StatusNotFound, apiError{Code: http.StatusNotFound, Message: "no protection zone " + ns + "/" + name + " that you may read"})
		return
	}
	v := zoneVMsView{Cluster: clusterWithRole(z, srv1alpha1.ClusterRolePrimary), VMs: []candidateVM{}}
	vms, err := s.primaryVMs(r.Context(), r, z, v.Cluster)
	var hidden errNotVisible
	switch {
	case errors.As(err, &hidden):
		v.Reason = hidden.msg
	case err != nil:
		v.Reason = "not shown: " + v.Cluster + " did not answer: " + err.Error()
	default:
		v.Visible = true
		v.VMs = vms
	}
	protectedBy := map[string]string{}
	for i := range snap.groups {
		if g := &snap.groups[i]; g.Namespace == ns {
			for _, m := range g.Spec.VirtualMachines {
				protectedBy[m.Namespace+"/"+m.Name] = g.Name
			}
		}
	}
	for i := range v.VMs {
		v.VMs[i].Group = protectedBy[v.VMs[i].Namespace+"/"+v.VMs[i].Name]
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) primaryVMs(ctx context.Context, r request, z *srv1alpha1.ProtectionZone, cluster string) ([]candidateVM, error) {
	cl, err := s.workloadClient(ctx, r, z, cluster)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, workloadTimeout)
	defer cancel()
	var list kubevirtv1.VirtualMachineList
	if err := cl.List(ctx, &list); err != nil {
		return nil, errors.New(toAPIError(err).Message)
	}
	out := make([]candidateVM, 0, len(list.Items))
	for _, vm := range list.Items {
		out = append(out, candidateVM{Namespace: vm.Namespace, Name: vm.Name})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}
