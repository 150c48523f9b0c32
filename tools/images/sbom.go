package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// sbomDir holds each image's software bill of materials, an SPDX 2.3 JSON
// document at sbomDir/<name>.spdx.json, where scanners that read SBOMs
// embedded in a filesystem (Syft's, Trivy's) find it beside the files it lists.
const sbomDir = "usr/share/doc/sbom"

// spdxDocument is the part of SPDX 2.3's JSON form the images use: packages
// without file analysis, each with a package URL, and how they relate.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID                string            `json:"SPDXID"`
	Name                  string            `json:"name"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	Supplier              string            `json:"supplier,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	LicenseConcluded      string            `json:"licenseConcluded"`
	LicenseDeclared       string            `json:"licenseDeclared"`
	CopyrightText         string            `json:"copyrightText"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
	Comment               string            `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

func purl(locator string) []spdxExternalRef {
	return []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: locator}}
}

func newPackage(id, name, version string) spdxPackage {
	return spdxPackage{SPDXID: id, Name: name, VersionInfo: version, DownloadLocation: "NOASSERTION",
		LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION", CopyrightText: "NOASSERTION"}
}

// sbom describes the image of s for arch: the image, its binary (from the
// module list the Go linker embeds, debug/buildinfo) with each Go module and
// the Go standard library, and the Debian packages it holds. It is a function
// of its inputs only, so reproducible builds stay reproducible.
func sbom(o options, s imageSpec, arch, bin string, binData []byte, debs []debPackage, distro string) ([]byte, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("reading the module list of %s: %w", s.Name, err)
	}
	digest := fmt.Sprintf("%x", sha256.Sum256(binData))
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              fmt.Sprintf("%s-%s-linux-%s", s.Name, o.Version, arch),
		DocumentNamespace: fmt.Sprintf("%s/spdx/%s/%s/linux-%s/%s", o.Source, s.Name, o.Version, arch, digest[:16]),
		CreationInfo: spdxCreationInfo{Created: time.Unix(o.Epoch, 0).UTC().Format(time.RFC3339),
			Creators: []string{"Tool: siterecovery-tools-images", "Organization: siterecovery"}},
	}
	image := newPackage("SPDXRef-Image", s.Name, o.Version)
	image.PrimaryPackagePurpose = "CONTAINER"
	image.ExternalRefs = purl(fmt.Sprintf("pkg:oci/%s@%s?arch=%s", s.Name, o.Version, arch))
	binary := newPackage("SPDXRef-Binary", info.Path, o.Version)
	binary.PrimaryPackagePurpose = "APPLICATION"
	binary.Checksums = []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: digest}}
	binary.Comment = "/" + binDir + "/" + s.Name + ", built with " + info.GoVersion
	binary.ExternalRefs = purl(fmt.Sprintf("pkg:golang/%s@%s", info.Main.Path, o.Version))
	doc.Packages = append(doc.Packages, image, binary)
	doc.Relationships = append(doc.Relationships,
		spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", "SPDXRef-Image"},
		spdxRelationship{"SPDXRef-Image", "CONTAINS", "SPDXRef-Binary"})

	stdlib := newPackage("SPDXRef-Go-stdlib", "stdlib", strings.TrimPrefix(info.GoVersion, "go"))
	stdlib.ExternalRefs = purl("pkg:golang/stdlib@" + stdlib.VersionInfo)
	doc.Packages = append(doc.Packages, stdlib)
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-Binary", "DEPENDS_ON", stdlib.SPDXID})
	for i, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		p := newPackage(fmt.Sprintf("SPDXRef-Go-%d", i), d.Path, d.Version)
		p.ExternalRefs = purl(fmt.Sprintf("pkg:golang/%s@%s", d.Path, d.Version))
		if d.Sum != "" {
			p.Comment = "go.sum " + d.Sum
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-Binary", "DEPENDS_ON", p.SPDXID})
	}
	for i, d := range debs {
		p := newPackage(fmt.Sprintf("SPDXRef-Deb-%d", i), d.Name, d.Version)
		p.Supplier = "Organization: Debian"
		p.Checksums = []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: d.SHA256}}
		p.ExternalRefs = purl(fmt.Sprintf("pkg:deb/debian/%s@%s?arch=%s&distro=%s", d.Name, d.Version, arch, distro))
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-Image", "CONTAINS", p.SPDXID})
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// debianDistro is the distro qualifier of the packages' URLs, debian-<VERSION_ID>,
// from the os-release base-files put in the tree.
func debianDistro(t *tree) string {
	for _, l := range strings.Split(string(t.data["usr/lib/os-release"]), "\n") {
		if v, ok := strings.CutPrefix(l, "VERSION_ID="); ok {
			return "debian-" + strings.Trim(v, `"`)
		}
	}
	return "debian"
}
