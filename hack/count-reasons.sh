#!/bin/sh
# Usage: hack/count-reasons.sh [tree]   # the repository by default
# Condition types and reasons defined more than once, per package.
# A definition is a constant Reason…/Condition… (or reason…/condition…) =
# "Literal" (grouped or a single-line const), or a string literal used as a
# reason: `Reason: "X"`, or the first argument of flow.Waiting/Stalled/Transient,
# trail.Fail/Succeed/Wait or EnterWithReason. Constants that alias another
# constant do not count. Condition types and reasons are separate vocabularies
# (Ramen's DataProtected is both). A value counts as duplicated when its
# vocabulary holds it more than once in the module's product code (apis,
# internal, cmd; tests excluded).
cd "${1:-$(dirname "$0")/..}" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
grep -rnE --include=*.go '^\s*(const\s+)?([Rr]eason|[Cc]ondition)[A-Za-z0-9]*(\s+[A-Za-z.]+)?\s*=\s*"[^"]*"' apis internal cmd \
  | grep -v _test.go \
  | sed -E 's/^([^:]+):[0-9]+:\s*(const\s+)?([Rr]eason|[Cc]ondition)([A-Za-z0-9]*)[^"]*"([^"]*)".*/\1 \3 \5 \3\4/' \
  | sed -E 's/ reason / Reason /; s/ condition / Condition /'
grep -rnoE --include=*.go '(Reason:\s*|flow\.(Waiting|Stalled|Transient)\(|trail\.(Fail|Succeed|Wait)\(|EnterWithReason\([^,]+,\s*)"[A-Z][A-Za-z]*"' apis internal cmd \
  | grep -v _test.go | sed -E 's/^([^:]+):[0-9]+:.*"([^"]*)"$/\1 Reason \2 literal/'
} > "$tmp"/defs.txt
awk '{print $2":"$3}' "$tmp"/defs.txt | sort | uniq -d > "$tmp"/dupvals.txt
echo "values defined more than once: $(wc -l < "$tmp"/dupvals.txt) ($(tr '\n' ' ' < "$tmp"/dupvals.txt))"
echo "package: definitions of a duplicated value"
awk 'FILENAME==ARGV[1]{d[$1]=1;next} {n=split($1,p,"/"); pk=p[1]; for(i=2;i<n;i++) pk=pk"/"p[i]; all[pk]=1} (($2":"$3) in d){c[pk]++} END{for(k in all) print k, c[k]+0}' "$tmp"/dupvals.txt "$tmp"/defs.txt | sort
