#!/bin/bash
# The known-answer harness's GPU part on the device machine, results packed into
# $OUT/verdicts.tar.gz (the device tool brings back at most 8 files):
#   bash tools/device_verdicts.sh WHAT[,WHAT...]
# WHAT: diff (bench/verdict_gpu.py DIFF_WORKLOAD, DIFF_ROUNDS rounds, judged there) |
#       verify (bench/verdicts.py verify --device cuda, VERIFY_PAIRS pairs, VERIFY_RUNS runs) |
#       suggest (bench/verdicts.py suggest --device cuda, SUGGEST_RUNS runs of each of SUGGEST_CASES
#       (names, space-separated), within SUGGEST_LIMIT seconds; the saved runs packed too, for
#       judge-suggest here)
# Builds dlpt first where this machine has no build of it yet.
set -o pipefail
what=${1:-diff,verify}
has() { case ",$what," in *",$1,"*) return 0;; esac; return 1; }
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} VERDICTS_HOST=${VERDICTS_HOST:-h100}
OUT=${OUT:-/tmp/dlpt-out}; mkdir -p "$OUT"
LOG=/tmp/verdicts-out; rm -rf "$LOG"; mkdir -p "$LOG"
trap 'cp bench/results/verdicts-*-"$VERDICTS_HOST"-* "$LOG"/ 2>/dev/null; tar -czf "$OUT/verdicts.tar.gz" -C /tmp verdicts-out' EXIT
if ls .whl/*.whl >/dev/null 2>&1 && [ ! -d /tmp/site ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi -L | tee "$LOG/gpu.txt"
if ! python3 -c "import dlpt._C" 2>/dev/null; then
  python3 -m pip install --no-build-isolation --no-deps -e . >"$LOG/build.log" 2>&1 || { tail -40 "$LOG/build.log"; exit 1; }
fi
if has diff; then
  rm -rf /tmp/gv
  timeout "${DIFF_LIMIT:-300}" python3 bench/verdict_gpu.py /tmp/gv "${DIFF_ROUNDS:-4}" ${DIFF_WORKLOAD:-decode} 2>&1 \
    | tee "$LOG/verdict_gpu.log" | tail -8
  cp /tmp/gv/gpu-verdicts.tar.gz "$OUT/" 2>/dev/null
  python3 bench/verdicts.py judge-gpu /tmp/gv 2>&1 | tee "$LOG/judge_gpu.txt" | grep -E "LINE-EXTRA flagged|A/A \| a line flagged"
fi
if has verify; then
  timeout "${VERIFY_LIMIT:-300}" python3 bench/verdicts.py verify --device cuda --pairs "${VERIFY_PAIRS:-3}" \
    --runs "${VERIFY_RUNS:-2}" --busy 0 --dir /tmp/vv 2>&1 | tee "$LOG/verify.log" | grep -E "^pair|right\)" | tail -30
fi
if has suggest; then
  # One case at a time, its saved runs packed after each: a call cut by its limit keeps the cases
  # it finished (the first GPU run lost all of them so), and judge-suggest reads them here.
  rm -rf /tmp/sv; end=$((SECONDS + ${SUGGEST_LIMIT:-420}))
  for c in ${SUGGEST_CASES:-sync loader launch fp32 attention optimizer pinned}; do
    left=$((end - SECONDS)); [ "$left" -gt 20 ] || break
    timeout "$left" python3 bench/verdicts.py suggest --device cuda --runs "${SUGGEST_RUNS:-1}" --cases "$c" \
      --dir /tmp/sv 2>&1 | tee -a "$LOG/suggest.log" | grep -E "^[a-z_]+ [0-9]+/[0-9]+:"
    tar -czf "$OUT/suggest-runs.tar.gz" -C /tmp sv 2>/dev/null
  done
  python3 bench/verdicts.py judge-suggest /tmp/sv 2>&1 | tee "$LOG/judge_suggest.txt" | grep -E "^\| [a-z]" | tail -30
fi
