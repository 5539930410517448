#!/bin/sh
# check-refusals.sh RUNNER DIR: each rule-*.seq of DIR without `# expect:` passes because the vulkan
# model's executor refuses its breach as predicted. This checks that the refusal happened: one
# persistent runner replays them all, and the summary line it prints for each file must name the
# first VUID of the file's note. It must be in the layer's list, or in either list where the note
# says the executor refuses the call itself. Exit 0 when every file meets that.
set -u
runner=$1
dir=$2
list=$(mktemp)
out=$(mktemp)
trap 'rm -f "$list" "$out"' EXIT
for f in "$dir"/rule-*.seq; do
  grep -q '^# expect' "$f" || echo "$f"
done >"$list"
[ -s "$list" ] || { echo "no rule files without an expectation in $dir"; exit 1; }
if ! timeout 120 "$runner" --backend vulkan --validation on --persistent "$list" >"$out" 2>&1; then
  cat "$out"
  echo "check-refusals: the runner failed"
  exit 1
fi
status=0
while read -r f; do
  vuid=$(grep '^# note:' "$f" | grep -o 'VUID-[A-Za-z0-9_-]*' | head -n 1)
  block=$(awk -v f="$f" 'index($0, "gpufuzz-runner: " f ":") == 1 { on = 1; next }
                         /^gpufuzz-runner: / { on = 0 } on' "$out")
  summary=$(printf '%s\n' "$block" | grep '^vulkan: ')
  if grep -q 'executor refuses' "$f"; then
    counted=$summary
  else
    counted=$(printf '%s\n' "$summary" | sed 's/; [0-9]* refused by the executor.*//')
  fi
  case "$counted" in
    *"$vuid"*) ;;
    *) echo "$f: no refusal of ${vuid:-(no VUID in the note)} counted: ${summary:-no summary line}"; status=1 ;;
  esac
  printf '%s\n' "$block" | grep -q '^outcome: pass$' || { echo "$f: did not pass"; status=1; }
done <"$list"
[ $status -eq 0 ] && echo "check-refusals: $(wc -l <"$list") files, each refusal counted"
exit $status
