#!/bin/sh
# campaign.sh GPUFUZZ RUNS SEED [OPTION...]: a short campaign of the vulkan model on lavapipe under
# the validation layer. It passes when:
# - every finding is the layer's known miss of VUID-vkDestroyPipelineLayout-pipelineLayout-02004
#   (class error at layout_destroy; corpus/runtimes/README.md): a crash, hang, mismatch, leak,
#   invalid (a message the shadow did not predict) or any other error fails it;
# - the layer refused operations as predicted (the executor's tally, GPUFUZZ_VULKAN_TALLY), so
#   the campaign did test the layer.
set -u
gpufuzz=$1
runs=$2
seed=$3
shift 3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
GPUFUZZ_VULKAN_TALLY="$out/tally" timeout 300 "$gpufuzz" fuzz --model vulkan --backend vulkan \
  --validation on --runs "$runs" --seed "$seed" --jobs 2 --quiet --out "$out/f" \
  --report "$out/report.json" "$@"
status=$?
fail() { echo "campaign.sh: $*"; exit 1; }
[ $status -le 1 ] || fail "gpufuzz fuzz exited $status"
[ -s "$out/report.json" ] || fail "no report"
for cls in crash hang spin mismatch leak invalid; do
  grep -q "\"$cls\": 0" "$out/report.json" || fail "findings of class $cls: $(ls "$out/f")"
done
for finding in "$out"/f/*/; do
  [ -f "$finding/finding.json" ] || continue  # queue/: guided search's kept sequences
  case $(basename "$finding") in
    error-layout_destroy-*)
      grep -q "VUID-vkDestroyPipelineLayout-pipelineLayout-02004" "$finding/finding.json" ||
        fail "$(basename "$finding") is not the known miss of 02004" ;;
    *) fail "finding $(basename "$finding")" ;;
  esac
done
[ -s "$out/tally" ] || fail "no tally: the executor counted no sequence"
refused=$(awk '{ n += $2 } END { print n + 0 }' "$out/tally")
sequences=$(wc -l <"$out/tally")
[ "$refused" -gt 0 ] || fail "the layer refused no operation as predicted in $sequences sequences"
echo "campaign.sh: $sequences sequences counted, $refused operations refused by the layer as predicted"
