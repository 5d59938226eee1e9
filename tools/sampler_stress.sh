#!/bin/bash
# Runs tools/generate_loop.py under `python -m dlpt --step-on generate --sample-hz HZ` RUNS times
# and counts the runs that did not exit 0 (a GPU machine; logs under $OUT/stress). A crash prints
# faulthandler's report (the sampler thread leaves fault signals unblocked for it).
# Usage: bash tools/sampler_stress.sh RUNS HZ [more dlpt options...]
OUT=${OUT:-/tmp/dlpt-out}; mkdir -p "$OUT/stress"
runs=$1; hz=$2; shift 2; failed=0
for i in $(seq 1 "$runs"); do
  log="$OUT/stress/hz$hz-$i.txt"
  t0=$(date +%s)
  COLUMNS=120 timeout 300 python3 -X faulthandler -m dlpt --step-on generate --sample-hz "$hz" "$@" \
    -o "$OUT/stress/hz$hz-$i.json" tools/generate_loop.py >"$log" 2>&1
  rc=$?
  rm -f "$OUT/stress/hz$hz-$i.json"
  if [ $rc -ne 0 ]; then failed=$((failed + 1)); grep -A12 "Fatal Python" "$log" | head -14; fi
  echo "hz=$hz run $i: exit $rc, $(( $(date +%s) - t0 )) s"
done
echo "hz=$hz: $failed of $runs runs failed"
