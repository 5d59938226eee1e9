#!/bin/bash
# Issue 32's cost check in one device call (< 550 s on an H100): builds dlpt, runs the per-launch
# seam bench (bench/launch_path.py, CPU side of the launch path) and the paired GPU bench
# (bench/paired.py), packs everything into $OUT/cost.tar.gz (the device tool brings back at most 8
# files) and prints the paired table last.
#   bash tools/device_cost.sh
# PAIRED_ARGS overrides the paired bench's arguments (default below: four workloads, 8 rounds;
# add dlpt_memory to --modes for the `--memory` row, at about +60 s). Verdicts need more than 8
# rounds (bench/comparisons.py).
# Issue 50 (lean op starts against --exact-ops; dlpt is the lean default on the GPU), two calls:
#   NO_LAUNCH_PATH=1 PAIRED_ARGS="--workloads decode small_gpt --modes aa dlpt dlpt_exact cupti_floor
#     torchprof --rounds 12" bash tools/device_cost.sh
#   NO_LAUNCH_PATH=1 PAIRED_ARGS="--workloads tiny_add heavy_mm small_gpt_compiled --modes aa dlpt
#     dlpt_exact cupti_floor torchprof --rounds 12" bash tools/device_cost.sh
# then pool the calls' JSON (cost-out/paired-*.json in each cost.tar.gz): python bench/pool.py *.json
set -o pipefail
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
OUT=${OUT:-/tmp/dlpt-out}; mkdir -p "$OUT"
LOG=/tmp/cost-out; rm -rf "$LOG"; mkdir -p "$LOG"
trap 'tar -czf "$OUT/cost.tar.gz" -C /tmp cost-out' EXIT
start=$(date +%s)
nvidia-smi -L | tee "$LOG/gpu.txt"
# The tree this call built: the device's copy is the working tree, committed or not.
{ git log --oneline -1; echo "uncommitted files: $(git status --porcelain 2>/dev/null | wc -l)"; } > "$LOG/commit.txt" 2>/dev/null
python3 -m pip install --no-build-isolation --no-deps -e . >"$LOG/build.log" 2>&1 || { tail -40 "$LOG/build.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
# The launch path's CPU cost on this host's CPU (no GPU involved): ns per launch by Python depth.
# NO_LAUNCH_PATH=1 leaves it out (a second call of the same build on the same machine).
if [ -z "${NO_LAUNCH_PATH:-}" ]; then
  timeout 60 python3 bench/launch_path.py --rounds 9 --depths 5 25 50 100 --out "$LOG" >"$LOG/launch_path.txt" 2>&1
  tail -6 "$LOG/launch_path.txt"
fi
# What is left of the 540 s (COST_DEADLINE) goes to the paired bench (it stops itself at the deadline).
left=$(( ${COST_DEADLINE:-540} - ($(date +%s) - start) ))
timeout "$left" python3 bench/paired.py --out "$LOG" \
  ${PAIRED_ARGS:---workloads small_gpt small_gpt_compiled decode cnn_loader --modes aa dlpt dlpt_nosampler torchprof cupti_floor --rounds 8} \
  >"$LOG/paired.txt" 2>"$LOG/paired.err"
rc=$?
# The bench saves its table after every round: a cut-off run's .md has the rounds it ran.
[ $rc -eq 124 ] && echo "paired bench stopped at the time limit (${left} s): the table below has the rounds done" \
  && ls -t "$LOG"/paired-*.md 2>/dev/null | head -1 | xargs -r tail -n +3 >>"$LOG/paired.txt"
echo "== paired ($(( $(date +%s) - start )) s in all)"
tail -30 "$LOG/paired.txt"
