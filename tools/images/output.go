package main

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// refNameAnnotation names each image in the layout's index, as `crane`,
// skopeo and containerd read it (oci:<dir>:<name>:<tag>).
const refNameAnnotation = "org.opencontainers.image.ref.name"

// writeLayout replaces o.Out with an OCI image layout holding the built images.
func writeLayout(o options, built []builtImage) error {
	if err := os.RemoveAll(o.Out); err != nil {
		return err
	}
	p, err := layout.Write(o.Out, empty.Index)
	if err != nil {
		return err
	}
	for _, b := range built {
		ann := map[string]string{refNameAnnotation: b.Spec.Name + ":" + o.Version}
		if err := p.AppendIndex(b.Index, layout.WithAnnotations(ann)); err != nil {
			return err
		}
	}
	return nil
}

// push writes each image's index (all its platforms) to <registry>/<name>:<version> with the credentials of
// the docker config (~/.docker/config.json) or a credential helper.
func push(o options, built []builtImage) error {
	for _, b := range built {
		ref, err := name.ParseReference(o.Registry + "/" + b.Spec.Name + ":" + o.Version)
		if err != nil {
			return err
		}
		if err := remote.WriteIndex(ref, b.Index, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		fmt.Printf("pushed %s@%s\n", ref, b.Digest)
	}
	return nil
}
