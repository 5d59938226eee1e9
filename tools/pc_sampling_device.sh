#!/bin/bash
# PC sampling (issue 35, docs/pc-sampling.md) on the GPU machine, in under 9 minutes: build, the
# diagnostic, the GPU tests, the README sample (the CLI on examples/compiled_gpt.py with its HTML
# report, and --kernel-lines) and the bench modes beside dlpt and the A/A row. Every part has its
# own time limit (together under 8 minutes after the build), so one that hangs costs only itself.
# $OUT gets 7 files (the device gives back 8 at most): summary.txt, pcs_check.log, pcs_tests.log,
# pcs_cli.txt, pcs_kernel_lines.txt, pcs_bench.log, and pcs_all.tgz with everything (sessions,
# HTML report, bench json/md, build logs).
#   bash tools/pc_sampling_device.sh
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/dlpt-out}
W=/tmp/pcs
rm -rf "$W"; mkdir -p "$W" "$OUT"
t0=$(date +%s)
pack() {
  tar czf "$OUT/pcs_all.tgz" -C "$W" . 2>/dev/null
  for f in summary.txt pcs_check.log pcs_tests.log pcs_cli.txt pcs_kernel_lines.txt pcs_bench.log; do
    [ -f "$W/$f" ] && cp "$W/$f" "$OUT/"
  done
}
if ! OUT="$W" bash tools/device_check.sh build >"$W/build.txt" 2>&1; then
  echo "build failed" | tee "$W/summary.txt"; tail -40 "$W/build.txt" "$W/build.log"; pack; exit 1
fi
# part LIMIT_S LOG COMMAND...: COMMAND's output in $W/LOG, its exit status and the time so far after it.
part() {
  local limit=$1 log=$2; shift 2
  timeout -k 5 "$limit" "$@" >"$W/$log" 2>&1
  echo "[$log] rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$W/$log" "$W/summary.txt"
}
part 80 pcs_check.log python3 tools/pc_sampling_check.py
part 130 pcs_tests.log python3 -m pytest -m gpu -q -rA --show-capture=no -p no:cacheprovider tests/gpu/test_pc_sampling.py
part 100 pcs_cli.txt env COLUMNS=140 python3 -m dlpt --pc-sampling --skip-first 6 -o "$W/pcs_compiled.json" \
  --html "$W/pcs_compiled.html" examples/compiled_gpt.py --steps 16
part 20 pcs_kernel_lines.txt env COLUMNS=160 python3 -m dlpt --load "$W/pcs_compiled.json" --kernel-lines triton_
part 140 pcs_bench.log python3 bench/paired.py --workloads small_gpt small_gpt_compiled \
  --modes aa dlpt dlpt_pcs dlpt_pcs_window --rounds 6 --out "$W"
gzip -f "$W/pcs_compiled.json" 2>/dev/null  # the session is ~10 MB of JSON
pack
cat "$W/summary.txt"; tail -25 "$W/pcs_check.log"; tail -12 "$W/pcs_tests.log"; tail -12 "$W/pcs_bench.log"
