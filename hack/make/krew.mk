# Included by the Makefile: the krew plugin's release archives and manifest.

# make krew-manifest VERSION=v0.1.0: builds kubectl-siterecovery for every
# release platform (linux and darwin, amd64 and arm64) from the tree of
# KREW_REF (HEAD; git archive, never the work tree) into bin/krew/, and writes
# plugins/siterecovery.yaml with the archives' sha256 sums. The release
# publishes those archives; internal/cli/krew's tests check in CI that the
# generator's sums are the archives' and that the checked-in manifest is its
# output. VERSION with or without its leading v.
KREW_VERSION = v$(patsubst v%,%,$(VERSION))
KREW_REF ?= HEAD

.PHONY: krew-manifest
krew-manifest: ## Build the plugin's release archives into bin/krew and write plugins/siterecovery.yaml with their sha256 sums (VERSION=v<semver>).
	$(GO) run ./plugins/krew-manifest -root $(CURDIR) -ref $(KREW_REF) -version $(KREW_VERSION) -out $(BIN)/krew -manifest plugins/siterecovery.yaml
