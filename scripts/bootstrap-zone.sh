#!/usr/bin/env bash
# bootstrap-zone.sh connects the workload clusters of a ProtectionZone to its DR
# namespace on the quorum cluster with least-privilege credentials.
#
# Run it with an admin kubeconfig of each cluster, after installing the
# workload-control-plane chart on each workload cluster with
# quorumAccess.drNamespaces containing the DR namespace. For each workload cluster it:
#   1. mints a token for the quorum-manager ServiceAccount of the DR namespace
#      through the TokenRequest API, valid for --token-duration (default 720h);
#      with --non-expiring it uses a ServiceAccount token Secret instead;
#   2. writes a kubeconfig holding the cluster's CA, its server and that token,
#      and no other credential;
#   3. checks with that kubeconfig that the cluster answers and, through
#      SelfSubjectAccessReviews, that every rule quorum-manager needs there is
#      granted; with the DRBD backend it also checks, with a SubjectAccessReview
#      of the admin kubeconfig, that the drbd-node-agent's ServiceAccount may
#      read the DRBD peer secrets in <DR namespace>-drbd-auth;
#   4. stores the kubeconfig in the Secret <cluster>-kubeconfig (key "kubeconfig")
#      in the DR namespace of the quorum cluster.
# Then it applies the ProtectionZone naming these Secrets.
#
# It is idempotent: run it again to rotate the tokens (before the duration
# ends); quorum-manager reconnects when a Secret changes. It never prints a
# token, and never passes one on a command line.
#
# Usage:
#   scripts/bootstrap-zone.sh --quorum-kubeconfig FILE --dr-namespace dr-NAME --zone NAME \
#     --cluster NAME=Primary:ADMIN_KUBECONFIG --cluster NAME=DR:ADMIN_KUBECONFIG \
#     [--server NAME=URL] [--backend DRBD|Offloaded|VolSync] [--storage-mapping SRC=DST]... \
#     [--client-timeout-seconds N] [--token-duration 720h | --non-expiring] \
#     [--service-account quorum-manager] [--agent-service-account siterecovery-system/drbd-node-agent] \
#     [--rules FILE]
#   scripts/bootstrap-zone.sh --list-rules [--rules FILE]
#
# --list-rules prints the rights it checks, one "scope verb resource" line
# each (scope: cluster, namespace for the DR namespace, peer-auth for its
# <DR namespace>-drbd-auth namespace, agent-peer-auth for the node agent's
# rights there), and exits without reaching a cluster.
#
# --agent-service-account names the drbd-node-agent's ServiceAccount as
# NAMESPACE/NAME: the workload chart's namespace and its agent's name
# (drbd-node-agent, prefixed when the chart is installed with a name override).
#
# --server overrides a cluster's API server address as the quorum cluster must
# reach it (the admin kubeconfig's address by default). KUBECTL names the
# kubectl binary (kubectl on PATH by default).
set -euo pipefail

KUBECTL="${KUBECTL:-kubectl}"
here="$(cd "$(dirname "$0")" && pwd)"

quorum_kubeconfig=""
dr_namespace=""
zone=""
backend="DRBD"
token_duration="720h"
non_expiring=false
service_account="quorum-manager"
agent_service_account="siterecovery-system/drbd-node-agent"
client_timeout=""
rules_file="$here/../charts/workload-control-plane/files/rbac/quorum-manager.yaml"
list_rules=false
declare -a clusters=() mappings=()
declare -A servers=()

die() { echo "bootstrap-zone: $*" >&2; exit 1; }
say() { echo "bootstrap-zone: $*"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quorum-kubeconfig) quorum_kubeconfig="$2"; shift 2 ;;
    --dr-namespace) dr_namespace="$2"; shift 2 ;;
    --zone) zone="$2"; shift 2 ;;
    --cluster) clusters+=("$2"); shift 2 ;;
    --server) servers["${2%%=*}"]="${2#*=}"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    --storage-mapping) mappings+=("$2"); shift 2 ;;
    --client-timeout-seconds) client_timeout="$2"; shift 2 ;;
    --token-duration) token_duration="$2"; shift 2 ;;
    --non-expiring) non_expiring=true; shift ;;
    --service-account) service_account="$2"; shift 2 ;;
    --agent-service-account) agent_service_account="$2"; shift 2 ;;
    --rules) rules_file="$2"; shift 2 ;;
    --list-rules) list_rules=true; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

[[ -r "$rules_file" ]] || die "cannot read the rules file $rules_file"
if ! $list_rules; then
  [[ -n "$quorum_kubeconfig" && -n "$dr_namespace" && -n "$zone" ]] ||
    die "--quorum-kubeconfig, --dr-namespace and --zone are required"
  [[ ${#clusters[@]} -ge 2 ]] || die "give at least two --cluster NAME=ROLE:KUBECONFIG"
fi
case "$backend" in DRBD|Offloaded|VolSync) ;; *) die "--backend must be DRBD, Offloaded or VolSync" ;; esac
[[ -z "$client_timeout" || "$client_timeout" =~ ^[0-9]+$ ]] || die "--client-timeout-seconds must be a whole number"
[[ "$agent_service_account" =~ ^[a-z0-9.-]+/[a-z0-9.-]+$ ]] || die "--agent-service-account must be NAMESPACE/NAME"

# needed_rules prints "scope verb resource" lines, scope being "cluster" or
# "namespace", from the generated roles of what quorum-manager does on a
# workload cluster (the Roles of the placeholder namespaces workload-cluster
# and workload-dr-namespace), read offline with kubectl so that no YAML parser
# is needed.
needed_rules() {
  local tmpl
  # shellcheck disable=SC2016 # a kubectl template, not a shell expansion
  tmpl='{{$ns := .metadata.namespace}}{{range .rules}}{{$r := .}}{{range .apiGroups}}{{$g := .}}{{range $r.resources}}{{$res := .}}{{range $r.verbs}}{{$ns}} {{.}} {{$res}}{{if $g}}.{{$g}}{{end}}{{"\n"}}{{end}}{{end}}{{end}}{{end}}'
  KUBECONFIG=/dev/null "$KUBECTL" annotate --local -f "$rules_file" siterecovery.trilio.io/read=rules -o go-template="$tmpl" |
    sed -n 's/^workload-cluster /cluster /p; s/^workload-dr-namespace /namespace /p'
}

# peer_auth_rules prints the "verb resource" lines of the Role the workload
# chart's drbd-peer-auth template gives quorum-manager in the DR namespace's
# peer-auth namespace, <DR namespace>-drbd-auth, where protection writes each
# replica's DRBD shared secret. That Role is written by hand in the template,
# not generated from markers; --list-rules prints it with the generated rules,
# and test/charts checks that it matches the template.
peer_auth_rules() {
  printf '%s\n' "get secrets" "create secrets" "update secrets" "delete secrets"
}

# agent_peer_auth_rules prints the "verb resource" lines of the Role the same
# template gives the drbd-node-agent there (rendered with the DRBD node agent
# enabled): it reads the Secret a DRBDResource names, by name. Without it
# every replica with peer authentication stalls on its agent; test/charts
# checks that it matches the template too.
agent_peer_auth_rules() {
  printf '%s\n' "get secrets"
}

# all_rules prints every "scope verb resource" line check_access checks, the
# scope being "cluster", "namespace" (the DR namespace), "peer-auth" (its
# peer-auth namespace) or "agent-peer-auth" (the node agent's rights there).
all_rules() {
  needed_rules
  peer_auth_rules | sed 's/^/peer-auth /'
  agent_peer_auth_rules | sed 's/^/agent-peer-auth /'
}

# mint_token writes a token for the ServiceAccount into the file $2.
mint_token() {
  local admin="$1" out="$2" secret="$service_account-token"
  if $non_expiring; then
    # A token Secret: kube-controller-manager fills in its token; it lasts
    # until the Secret is deleted.
    "$KUBECTL" --kubeconfig "$admin" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Secret
type: kubernetes.io/service-account-token
metadata:
  name: $secret
  namespace: $dr_namespace
  annotations:
    kubernetes.io/service-account.name: $service_account
EOF
    local i
    for i in $(seq 1 60); do
      "$KUBECTL" --kubeconfig "$admin" -n "$dr_namespace" get secret "$secret" -o jsonpath='{.data.token}' >"$out.b64"
      if [[ -s "$out.b64" ]]; then
        base64 -d <"$out.b64" >"$out"
        rm -f "$out.b64"
        return 0
      fi
      [[ $i -lt 60 ]] && sleep 1
    done
    die "the token Secret $dr_namespace/$secret got no token within a minute (is kube-controller-manager running?)"
  fi
  "$KUBECTL" --kubeconfig "$admin" -n "$dr_namespace" create token "$service_account" --duration "$token_duration" >"$out"
}

# write_kubeconfig writes a kubeconfig with the CA, server and token only.
write_kubeconfig() {
  local name="$1" admin="$2" token_file="$3" out="$4" server ca
  server="${servers[$name]:-$("$KUBECTL" --kubeconfig "$admin" config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')}"
  ca="$("$KUBECTL" --kubeconfig "$admin" config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')"
  if [[ -z "$ca" ]]; then
    local ca_file
    ca_file="$("$KUBECTL" --kubeconfig "$admin" config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority}')"
    [[ -n "$ca_file" ]] || die "$name: the admin kubeconfig names no CA; quorum-manager needs the cluster's CA"
    ca="$(base64 -w0 <"$ca_file")"
  fi
  # printf is a shell builtin: the token reaches the file without a command line.
  umask 077
  {
    printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: %s\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n' "$name" "$server" "$ca"
    printf 'users:\n- name: %s\n  user:\n    token: %s\n' "$service_account" "$(cat "$token_file")"
    printf 'contexts:\n- name: %s\n  context:\n    cluster: %s\n    user: %s\n    namespace: %s\ncurrent-context: %s\n' "$name" "$name" "$service_account" "$dr_namespace" "$name"
  } >"$out"
}

# allowed prints true when the kubeconfig $1 may do verb $2 on resource $3
# (resource[/subresource][.group]) in namespace $4 (all namespaces when
# empty); given $5 (NAMESPACE/NAME) it asks instead whether that
# ServiceAccount may, through a SubjectAccessReview the kubeconfig $1 (an
# admin's) creates. It writes the review itself rather than running
# kubectl auth can-i, which turns a resource the cluster does not serve (yet:
# KubeVirt or the snapshot CRDs installed later) into a resource of the core
# group and so answers no for a right that is granted.
allowed() {
  local res="${3%%.*}" group="" sub="" kind="SelfSubjectAccessReview" subject=""
  [[ "$3" == *.* ]] && group="${3#*.}"
  if [[ "$res" == */* ]]; then sub="${res#*/}"; res="${res%%/*}"; fi
  if [[ -n "${5:-}" ]]; then
    local sa_ns="${5%%/*}"
    kind="SubjectAccessReview"
    subject="  user: \"system:serviceaccount:$sa_ns:${5#*/}\"
  groups: [\"system:serviceaccounts\", \"system:serviceaccounts:$sa_ns\", \"system:authenticated\"]
"
  fi
  # --validate=false: validating needs a read of the CRDs, which it lacks.
  "$KUBECTL" --kubeconfig "$1" create --validate=false -o jsonpath='{.status.allowed}' -f - <<EOF
apiVersion: authorization.k8s.io/v1
kind: $kind
spec:
${subject}  resourceAttributes:
    verb: "$2"
    group: "$group"
    resource: "$res"
    subresource: "$sub"
    namespace: "$4"
EOF
}

# check_access runs a SelfSubjectAccessReview, with the minted kubeconfig, for
# every verb of every rule of quorum-manager, and with the DRBD backend a
# SubjectAccessReview, with the admin kubeconfig, for each of the node
# agent's; it prints the missing ones and fails if any is.
check_access() {
  local name="$1" minted="$2" admin="$3" scope verb resource missing=0 n=0 hint=""
  while read -r scope verb resource; do
    local ns="" where="in every namespace" who="$service_account" as="" kc="$minted"
    case "$scope" in
      namespace) ns="$dr_namespace" where="in $dr_namespace" ;;
      peer-auth) ns="$dr_namespace-drbd-auth" where="in $dr_namespace-drbd-auth" ;;
      agent-peer-auth)
        # Only the DRBD backend authenticates DRBD peers.
        [[ "$backend" == DRBD ]] || continue
        ns="$dr_namespace-drbd-auth" where="in $dr_namespace-drbd-auth"
        who="the node agent $agent_service_account" as="$agent_service_account" kc="$admin" ;;
    esac
    n=$((n + 1))
    if [[ "$(allowed "$kc" "$verb" "$resource" "$ns" "$as" 2>/dev/null)" != true ]]; then
      echo "bootstrap-zone: $name: $who cannot $verb $resource $where" >&2
      missing=$((missing + 1))
      [[ -z "$as" ]] || hint=" and drbdNodeAgent.enabled=true (name the agent's ServiceAccount with --agent-service-account NAMESPACE/NAME if the chart is not installed in ${agent_service_account%%/*} as ${agent_service_account#*/})"
    fi
  done < <(all_rules)
  [[ $n -gt 0 ]] || die "$name: no rules read from $rules_file"
  [[ $missing -eq 0 ]] || die "$name: $missing of $n permissions missing; install or upgrade the workload-control-plane chart with quorumAccess.drNamespaces={$dr_namespace}$hint"
  say "$name: all $n permissions quorum-manager and the node agent need are granted"
}

if $list_rules; then
  all_rules
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 700 "$work"

q() { "$KUBECTL" --kubeconfig "$quorum_kubeconfig" "$@"; }

"$KUBECTL" --kubeconfig "$quorum_kubeconfig" get namespace "$dr_namespace" >/dev/null ||
  die "namespace $dr_namespace does not exist on the quorum cluster; install the quorum-control-plane chart there first"

zone_clusters=""
for spec in "${clusters[@]}"; do
  name="${spec%%=*}"
  rest="${spec#*=}"
  role="${rest%%:*}"
  admin="${rest#*:}"
  [[ -n "$name" && "$rest" == *:* && -r "$admin" ]] || die "--cluster $name: want NAME=ROLE:KUBECONFIG with a readable kubeconfig"
  case "$role" in Primary|DR) ;; *) die "--cluster $name: role must be Primary or DR" ;; esac

  "$KUBECTL" --kubeconfig "$admin" -n "$dr_namespace" get serviceaccount "$service_account" >/dev/null 2>&1 ||
    die "$name: no ServiceAccount $dr_namespace/$service_account; install the workload-control-plane chart with quorumAccess.drNamespaces={$dr_namespace}"

  token="$work/$name.token"
  minted="$work/$name.kubeconfig"
  mint_token "$admin" "$token"
  write_kubeconfig "$name" "$admin" "$token" "$minted"
  rm -f "$token"

  # kubectl's errors name the server and the HTTP status, never the token.
  if ! "$KUBECTL" --kubeconfig "$minted" get --raw /version >"$work/version" 2>"$work/version.err"; then
    die "$name: the cluster does not answer with the minted kubeconfig: $(tail -1 "$work/version.err")"
  fi
  version="$(sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p' "$work/version")"
  say "$name: reachable with the minted kubeconfig (Kubernetes $version)"
  check_access "$name" "$minted" "$admin"

  q -n "$dr_namespace" create secret generic "$name-kubeconfig" --from-file=kubeconfig="$minted" \
    --dry-run=client -o yaml | q apply -f - >/dev/null
  q -n "$dr_namespace" label secret "$name-kubeconfig" --overwrite \
    app.kubernetes.io/part-of=siterecovery siterecovery.trilio.io/zone="$zone" >/dev/null
  rm -f "$minted"
  if $non_expiring; then
    say "$name: stored $dr_namespace/$name-kubeconfig (ServiceAccount token Secret: no expiry; delete $dr_namespace/$service_account-token on $name to revoke it)"
  else
    say "$name: stored $dr_namespace/$name-kubeconfig (token valid for $token_duration; run this again before then to rotate it)"
  fi

  zone_clusters+="    - name: $name
      role: $role
      kubeconfigSecretRef:
        name: $name-kubeconfig
"
  if [[ -n "$client_timeout" ]]; then
    zone_clusters+="      client:
        timeoutSeconds: $client_timeout
"
  fi
done

zone_mappings=""
for m in "${mappings[@]}"; do
  [[ "$m" == *=* ]] || die "--storage-mapping $m: want SOURCE=TARGET"
  zone_mappings+="    - sourceStorageClass: ${m%%=*}
      targetStorageClass: ${m#*=}
"
done

{
  printf 'apiVersion: siterecovery.trilio.io/v1alpha1\nkind: ProtectionZone\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  storageBackend: %s\n  clusters:\n%s' \
    "$zone" "$dr_namespace" "$backend" "$zone_clusters"
  [[ -z "$zone_mappings" ]] || printf '  storageMappings:\n%s' "$zone_mappings"
} | q apply --server-side --field-manager=bootstrap-zone --force-conflicts -f - >/dev/null
say "applied ProtectionZone $dr_namespace/$zone with ${#clusters[@]} clusters, backend $backend"
