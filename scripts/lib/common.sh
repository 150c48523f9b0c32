# shellcheck shell=bash
# Shared by the runbooks: argument parsing helpers and the CLI's exit codes.
# Sourced, never run.

# Exit codes of kubectl siterecovery (kubectl siterecovery --help).
readonly SR_EXIT_PROBLEMS=3

# NAMESPACE is the DR namespace on the quorum cluster; -n overrides it.
NAMESPACE="${NAMESPACE:-}"

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# sr runs the CLI through kubectl (kubectl finds kubectl-siterecovery on PATH)
# in the DR namespace.
sr() {
  if [[ -n "$NAMESPACE" ]]; then
    kubectl siterecovery -n "$NAMESPACE" "$@"
  else
    kubectl siterecovery "$@"
  fi
}

# k runs kubectl in the DR namespace.
k() {
  if [[ -n "$NAMESPACE" ]]; then
    kubectl -n "$NAMESPACE" "$@"
  else
    kubectl "$@"
  fi
}

# preflight runs validate for the group and stops on a problem.
preflight() {
  local group="$1" rc=0
  say "preflight: kubectl siterecovery validate group $group"
  sr validate group "$group" || rc=$?
  if [[ $rc -eq $SR_EXIT_PROBLEMS ]]; then
    die "validate found problems (above); fix them, or use disaster-failover.sh if the source cluster is lost"
  elif [[ $rc -ne 0 ]]; then
    die "validate could not run (exit $rc)"
  fi
}
