// Package images tests the container images `make images` builds (tools/images):
// it builds them into an OCI image layout, reads the layout with the standard
// library only, and checks what a cluster relies on: each image is an index for
// linux/amd64 and linux/arm64 whose binaries are static ELF files of that
// machine; the entrypoints of the test machine's architecture run; the
// controllers are non-root; each agent image holds drbdadm, drbdsetup and
// drbdmeta (drbdadm runs on the test machine's architecture) and lists them in
// a dpkg database a scanner reads (read here with a Debian control-file
// parser, tools/images/dpkgdb); each image carries an SPDX SBOM naming every Go
// module its binary embeds and every Debian package; the labels carry version
// and source; builds are reproducible; the agent's packages are pinned by
// digest; and tools/images is the only way images are built (no Dockerfile).
package images
