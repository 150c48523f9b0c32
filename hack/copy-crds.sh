#!/usr/bin/env bash
# Copies each generated CRD from config/crd/bases into the chart that installs it:
# quorum-tier CRDs into charts/protectionzone, workload-tier CRDs into
# charts/workload-control-plane. ProtectionGroup lives on both tiers.
set -euo pipefail
cd "$(dirname "$0")/.."

src=config/crd/bases
quorum=charts/protectionzone/crds
workload=charts/workload-control-plane/crds

quorum_crds=(
  siterecovery.trilio.io_protectionzones.yaml
  siterecovery.trilio.io_protectiongroups.yaml
  siterecovery.trilio.io_protectionrequests.yaml
  siterecovery.trilio.io_failoverrequests.yaml
  siterecovery.trilio.io_testfailovers.yaml
  siterecovery.trilio.io_replicationgroupstatuses.yaml
  siterecovery.trilio.io_rpoevents.yaml
  dr.siterecovery.trilio.io_drpolicies.yaml
  dr.siterecovery.trilio.io_drplacementcontrols.yaml
)
workload_crds=(
  siterecovery.trilio.io_protectiongroups.yaml
  siterecovery.trilio.io_drbdresources.yaml
  siterecovery.trilio.io_drbdallocations.yaml
  dr.siterecovery.trilio.io_volumereplicationgroups.yaml
  dr.siterecovery.trilio.io_replicationgroupsources.yaml
  dr.siterecovery.trilio.io_replicationgroupdestinations.yaml
)

# Every generated CRD must belong to a tier, so a new kind cannot be forgotten.
for f in "$src"/*.yaml; do
  base=$(basename "$f")
  if [[ " ${quorum_crds[*]} ${workload_crds[*]} " != *" ${base} "* ]]; then
    echo "copy-crds: $base belongs to no chart; add it to $0" >&2
    exit 1
  fi
done

rm -rf "$quorum" "$workload"
mkdir -p "$quorum" "$workload"
for f in "${quorum_crds[@]}"; do cp "$src/$f" "$quorum/$f"; done
for f in "${workload_crds[@]}"; do cp "$src/$f" "$workload/$f"; done
