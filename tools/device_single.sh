#!/bin/bash
# One-GPU checks on the device machine, everything packed into $OUT/single.tar.gz (the device
# tool brings back at most 8 files); a summary is printed last.
#   bash tools/device_single.sh WHAT[,WHAT...]
# WHAT: build | tests (pytest -m gpu tests/gpu, the multi-GPU file left out) |
#       headers (eager, compiled and generate runs whose headers show the calibration, diff) |
#       paired (bench/paired.py: PAIRED_ARGS, default small_gpt small_gpt_compiled decode)
set -o pipefail
what=${1:-build,tests}
has() { case ",$what," in *",$1,"*) return 0;; esac; return 1; }
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
OUT=${OUT:-/tmp/dlpt-out}; mkdir -p "$OUT"
LOG=/tmp/single-out; rm -rf "$LOG"; mkdir -p "$LOG"
trap 'tar -czf "$OUT/single.tar.gz" -C /tmp single-out' EXIT
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
nvidia-smi -L | tee "$LOG/gpu.txt"
if has build; then
  python3 -m pip install --no-build-isolation --no-deps -e . >"$LOG/build.log" 2>&1 || { tail -40 "$LOG/build.log"; exit 1; }
fi
if has tests; then
  timeout 480 python3 -m pytest -m gpu -q -rs -p no:cacheprovider --basetemp /tmp/pt tests/gpu \
    --ignore=tests/gpu/test_multirank.py 2>&1 | tee "$LOG/gpu_tests.log" | tail -25
  # The calibration test's sessions and the script's own step ends, to read its windows afterwards.
  for d in /tmp/pt/test_untraced_and_traced*; do
    [ -d "$d" ] && mkdir -p "$LOG/calib/${d##*/}" && cp "$d"/*.json "$LOG/calib/${d##*/}/" 2>/dev/null
  done
fi
if has headers; then
  (cd "$LOG" && COLUMNS=120 timeout 150 python3 -m dlpt -o e.json "$OLDPWD/examples/gpu_gpt.py" --steps 300 >eager.txt 2>&1)
  (cd "$LOG" && COLUMNS=120 timeout 200 python3 -m dlpt -o c.json "$OLDPWD/examples/compiled_gpt.py" --steps 300 --short-every 0 >compiled.txt 2>&1)
  (cd "$LOG" && COLUMNS=120 timeout 150 python3 -m dlpt --step-on generate -o g.json "$OLDPWD/tools/generate_loop.py" 110 >generate.txt 2>&1)
  (cd "$LOG" && COLUMNS=120 timeout 60 python3 -m dlpt diff e.json c.json >diff.txt 2>&1)
  for f in eager compiled generate; do echo "== $f"; grep -E "step wall|warm-up|dlpt's cost" "$LOG/$f.txt" | head -4; done
fi
if has paired; then
  python3 bench/paired.py --out "$LOG" ${PAIRED_ARGS:---workloads small_gpt small_gpt_compiled decode --modes aa dlpt cupti_floor torchprof --rounds 8} \
    2>"$LOG/paired.err" | tail -30
fi
