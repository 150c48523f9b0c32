// Package images tests the container images `make images` builds (tools/images):
// it builds them into an OCI image layout, reads the layout with the standard
// library only, and checks what a cluster relies on: each image is an index for
// linux/amd64 and linux/arm64 whose binaries are static ELF files of that
// machine; the entrypoints of the test machine's architecture run; the
// controllers are non-root; each agent image holds drbdadm, drbdsetup and
// drbdmeta (drbdadm runs on the test machine's architecture); the labels carry
// version and source; builds are reproducible; and each images/<name>/Dockerfile
// describes the same image.
package images
