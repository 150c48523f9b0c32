package main

import (
	"bytes"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"sigs.k8s.io/yaml"
)

// kind is what virt-operator sets on one CRD besides its schema
// (NewVirtualMachineCrd, NewVirtualMachineInstanceCrd,
// NewVirtualMachineInstancetypeCrd and NewVirtualMachinePreferenceCrd in
// KubeVirt's pkg/virt-operator/resource/generate/components/crds.go).
type kind struct {
	group, version         string
	kind, plural, singular string
	shortNames             []string
	columns                []apiextensionsv1.CustomResourceColumnDefinition
	// statusSubresource: virt-operator gives VirtualMachines a status
	// subresource and VirtualMachineInstances none (virt-controller and
	// virt-handler write a VMI's status with ordinary updates, so a client
	// calling a VMI's /status fails on a real cluster, and here too).
	statusSubresource bool
	// pkg is the kubevirt.io/api package of the kind's Go types.
	pkg apiPackage
	// dir is the folder under test/crds the file goes to: thirdparty's
	// are installed on every workload cluster, instancetype's only where a
	// test asks (test/env Options.Instancetypes).
	dir string
}

// apiPackage is a kubevirt.io/api package controller-gen reads, with the
// options KubeVirt's hack/generate.sh gives it there.
type apiPackage struct{ path, options string }

var (
	corePackage         = apiPackage{path: "core/v1", options: "crd:allowDangerousTypes=true"}
	instancetypePackage = apiPackage{path: "instancetype/v1beta1", options: "crd"}
)

func (k kind) file() string { return k.group + "_" + k.plural + ".yaml" }

// ageColumn and readyColumn are the printer columns both core kinds have.
var (
	ageColumn   = apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}
	readyColumn = apiextensionsv1.CustomResourceColumnDefinition{Name: "Ready", Type: "string",
		JSONPath: ".status.conditions[?(@.type=='Ready')].status"}
)

// kinds are the CRDs written. The cluster-scoped instancetypes and
// preferences are not among them: the product copies only namespaced ones.
var kinds = []kind{
	{
		group: kubevirtv1.GroupVersion.Group, version: kubevirtv1.ApiLatestVersion, pkg: corePackage, dir: "thirdparty",
		kind: kubevirtv1.VirtualMachineGroupVersionKind.Kind, plural: "virtualmachines", singular: "virtualmachine",
		shortNames: []string{"vm", "vms"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			ageColumn,
			{Name: "Status", Description: "Human Readable Status", Type: "string", JSONPath: ".status.printableStatus"},
			readyColumn,
		},
		statusSubresource: true,
	},
	{
		group: kubevirtv1.GroupVersion.Group, version: kubevirtv1.ApiLatestVersion, pkg: corePackage, dir: "thirdparty",
		kind: kubevirtv1.VirtualMachineInstanceGroupVersionKind.Kind, plural: "virtualmachineinstances", singular: "virtualmachineinstance",
		shortNames: []string{"vmi", "vmis"},
		columns: []apiextensionsv1.CustomResourceColumnDefinition{
			ageColumn,
			{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
			{Name: "IP", Type: "string", JSONPath: ".status.interfaces[0].ipAddress"},
			{Name: "NodeName", Type: "string", JSONPath: ".status.nodeName"},
			readyColumn,
			{Name: "Live-Migratable", Type: "string", JSONPath: ".status.conditions[?(@.type=='LiveMigratable')].status", Priority: 1},
			{Name: "Paused", Type: "string", JSONPath: ".status.conditions[?(@.type=='Paused')].status", Priority: 1},
		},
	},
	{
		group: instancetypev1beta1.SchemeGroupVersion.Group, version: instancetypev1beta1.SchemeGroupVersion.Version,
		pkg: instancetypePackage, dir: "instancetype",
		kind: "VirtualMachineInstancetype", plural: "virtualmachineinstancetypes", singular: "virtualmachineinstancetype",
		shortNames: []string{"vminstancetype", "vminstancetypes", "vmf", "vmfs"},
	},
	{
		group: instancetypev1beta1.SchemeGroupVersion.Group, version: instancetypev1beta1.SchemeGroupVersion.Version,
		pkg: instancetypePackage, dir: "instancetype",
		kind: "VirtualMachinePreference", plural: "virtualmachinepreferences", singular: "virtualmachinepreference",
		shortNames: []string{"vmpref", "vmprefs", "vmp", "vmps"},
	},
}

// crdFile is a CRD as a file holds it: no status, no server-set metadata.
type crdFile struct {
	APIVersion string                                       `json:"apiVersion"`
	Kind       string                                       `json:"kind"`
	Metadata   crdMetadata                                  `json:"metadata"`
	Spec       apiextensionsv1.CustomResourceDefinitionSpec `json:"spec"`
}

type crdMetadata struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// version is the one version of k the file serves and stores: kubevirt.io's
// latest of kubevirt.io/api's supported versions (see the package comment),
// or the instancetype group's only one, with its conversion strategy.
func version(k kind) (apiextensionsv1.CustomResourceDefinitionVersion, *apiextensionsv1.CustomResourceConversion, error) {
	if k.group != kubevirtv1.GroupVersion.Group {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: k.version, Served: true, Storage: true},
			&apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}, nil
	}
	for _, v := range kubevirtv1.ApiSupportedVersions {
		if v.Name == k.version && v.Served && v.Storage {
			return *v.DeepCopy(), nil, nil
		}
	}
	return apiextensionsv1.CustomResourceDefinitionVersion{}, nil,
		fmt.Errorf("kubevirt.io/api no longer serves and stores %s", k.version)
}

// render is the file for one kind: virt-operator's CRD with one version
// only (see the package comment), and a header saying where it comes from.
func render(k kind, schema *apiextensionsv1.CustomResourceValidation, apiVersion string) ([]byte, error) {
	if schema == nil {
		return nil, fmt.Errorf("no schema for %s", k.singular)
	}
	v, conversion, err := version(k)
	if err != nil {
		return nil, err
	}
	v.AdditionalPrinterColumns = k.columns
	if k.statusSubresource {
		v.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	v.Schema = schema
	crd := crdFile{
		APIVersion: apiextensionsv1.SchemeGroupVersion.String(),
		Kind:       "CustomResourceDefinition",
		Metadata:   crdMetadata{Name: k.plural + "." + k.group, Labels: map[string]string{kubevirtv1.AppLabel: ""}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: k.group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: k.plural, Singular: k.singular, Kind: k.kind,
				ShortNames: k.shortNames, Categories: []string{"all"},
			},
			Scope:      apiextensionsv1.NamespaceScoped,
			Conversion: conversion,
			Versions:   []apiextensionsv1.CustomResourceDefinitionVersion{v},
		},
	}
	body, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `# Generated by tools/kubevirt-crds (make kubevirt-crds) from %s@%s; do not edit.
# The %s CRD as KubeVirt's virt-operator installs it: the schema is
# controller-gen's over %s/%s, checked equal to the one
# virt-operator of the same release embeds; names, printer columns and
# subresources are those virt-operator sets.%s
---
`, apiModule, apiVersion, k.kind, apiModule, k.pkg.path, onlyServed(k))
	b.Write(body)
	return b.Bytes(), nil
}

// onlyServed is the header's note on versions where the file serves fewer
// than virt-operator's CRD.
func onlyServed(k kind) string {
	if k.group != kubevirtv1.GroupVersion.Group {
		return ""
	}
	return ` Unlike virt-operator's, only v1 is
# served (it also serves the deprecated v1alpha3 with the same schema).`
}
