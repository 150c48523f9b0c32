// Package images tests the container images `make images` builds (tools/images):
// it builds them into an OCI image layout, reads the layout with the standard
// library only, and checks what a cluster relies on: each entrypoint runs, the
// controllers are static and non-root, the agent's filesystem holds a drbdadm that
// runs, the labels carry version and source, builds are reproducible, and each
// images/<name>/Dockerfile describes the same image.
package images
