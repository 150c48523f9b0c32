#!/usr/bin/env bash
# Copies each tier's generated role (config/rbac/<tier>/role.yaml, written by
# controller-gen from the +kubebuilder:rbac markers) into the chart that runs the
# tier, under files/rbac/<tier>.yaml. The charts' RBAC templates read the rules
# from there with .Files.Get; names, namespaces and bindings stay the charts'.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A chart_of=(
  [quorum-manager]=charts/quorum-control-plane
  [pg-controller]=charts/workload-control-plane
  [drbd-node-agent]=charts/workload-control-plane
)

# Every generated role must belong to a chart, so a new tier cannot be forgotten.
for d in config/rbac/*/; do
  tier=$(basename "$d")
  if [[ -z "${chart_of[$tier]:-}" ]]; then
    echo "copy-rbac: config/rbac/$tier belongs to no chart; add it to $0" >&2
    exit 1
  fi
done

for chart in $(printf '%s\n' "${chart_of[@]}" | sort -u); do
  rm -rf "$chart/files/rbac"
  mkdir -p "$chart/files/rbac"
done
for tier in "${!chart_of[@]}"; do
  cp "config/rbac/$tier/role.yaml" "${chart_of[$tier]}/files/rbac/$tier.yaml"
done
# quorum-manager's role file also holds what it does on the workload clusters
# (the Roles of the placeholder namespaces workload-cluster and
# workload-dr-namespace); the workload chart grants those to its identity there.
cp config/rbac/quorum-manager/role.yaml charts/workload-control-plane/files/rbac/quorum-manager.yaml
# The CLI's validate checks, as the identity of each zone kubeconfig Secret,
# exactly the rights quorum-manager's workload Roles grant; it embeds them.
cp config/rbac/quorum-manager/role.yaml internal/cli/validate/quorum-manager-role.yaml
