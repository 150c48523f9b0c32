// Module images builds the product's container images without a container daemon
// (make images): static binaries from this repository on an empty base, and the
// drbd-node-agent on a root filesystem assembled from Debian's drbd-utils packages.
// It is its own module so that go-containerregistry does not raise the product's
// dependencies.
module github.com/siterecovery/siterecovery/tools/images

go 1.26.0

require (
	github.com/google/go-containerregistry v0.22.1
	pault.ag/go/debian v0.21.4
)

require (
	github.com/ProtonMail/go-crypto v1.5.2 // indirect
	github.com/cloudflare/circl v1.6.5 // indirect
	github.com/docker/cli v29.7.2+incompatible // indirect
	github.com/docker/docker-credential-helpers v0.9.3 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	gotest.tools/v3 v3.5.2 // indirect
	pault.ag/go/topsort v0.1.1 // indirect
)
