#!/bin/bash
# Build dlpt on the GPU machine against its torch, then run what is asked, logs under $OUT (the
# device tool brings them back). Usage:
#   [PAIRED_ARGS=...] [BENCH_ARGS=...] bash tools/device_check.sh WHAT[,WHAT...] [extra pytest args...]
# WHAT: build | smoke | tests | compiled | bench | paired | floor | multirank | all (smoke,tests,compiled,bench)
# multirank (2+ GPUs, device kind nvidia-h200-x2): tests/gpu/test_multirank.py, the DDP example under
# torchrun as a user runs it, and tools/ddp_paired.py (DDP_PAIRED_ARGS=...) beside the results.
set -o pipefail
what=${1:-all}; shift || true
[ "$what" = all ] && what=smoke,tests,compiled,bench
has() { case ",$what," in *",$1,"*) return 0;; esac; return 1; }
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/dlpt-out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then  # cupti-python travels as a wheel (no network there)
  wheels=(.whl/*.whl)
  # Its dependencies only where the machine lacks them: two versions of one package break installs.
  python3 -c "import cuda.bindings" 2>/dev/null || wheels+=(.whl/extra/*.whl)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${wheels[@]}" \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
nvidia-smi -L | tee "$OUT/gpu.txt"
python3 -c "import torch,sys;print('python',sys.version.split()[0],'torch',torch.__version__)" | tee -a "$OUT/gpu.txt"
t0=$(date +%s)
if ! python3 -m pip install --no-build-isolation --no-deps -e . >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
echo "build: $(( $(date +%s) - t0 )) s"
if has floor; then  # the CPU micro-benchmark, on this machine's (quieter) CPU
  python3 bench/floor.py --rounds ${FLOOR_ROUNDS:-9} --out "$OUT" 2>&1 | tail -30
fi
if has paired; then
  python3 bench/paired.py --out "$OUT" ${PAIRED_ARGS:-} 2>"$OUT/paired.err" | tail -60
  tail -5 "$OUT/paired.err"
fi
if has smoke; then
  COLUMNS=100 python3 -m dlpt --skip-first 3 examples/mlp_train.py 2>&1 | tee "$OUT/example_mlp.txt" | tail -30
  COLUMNS=120 python3 -m dlpt --skip-first 3 -o "$OUT/gpt.json" examples/gpu_gpt.py --steps 10 >"$OUT/example_gpt.txt" 2>&1
fi
if has compiled; then  # the compiled example, as a user runs it
  COLUMNS=140 python3 -m dlpt --skip-first 6 -o "$OUT/compiled.json" examples/compiled_gpt.py --steps 12 >"$OUT/example_compiled.txt" 2>&1
  COLUMNS=140 python3 -m dlpt --skip-first 6 -o "$OUT/compiled_ro.json" examples/compiled_gpt.py --steps 12 --mode reduce-overhead >"$OUT/example_compiled_ro.txt" 2>&1
  tail -n 5 "$OUT/example_compiled.txt" "$OUT/example_compiled_ro.txt"
fi
if has tests; then
  python3 -m pytest -m gpu -q -rs tests/gpu "$@" 2>&1 | tee "$OUT/gpu_tests.log" | tail -60
fi
if has multirank; then  # NCCL_NVLS_ENABLE and the rest of the environment pass through unchanged
  python3 -m pytest -m gpu -q -rs tests/gpu/test_multirank.py "$@" 2>&1 | tee "$OUT/multirank_tests.log" | tail -30
  COLUMNS=140 torchrun --standalone --nproc_per_node=2 -m dlpt --skip-first 5 -o "$OUT/ddp.json" \
    examples/ddp_train.py --steps 20 >"$OUT/example_ddp.txt" 2>&1; tail -n 40 "$OUT/example_ddp.txt"
  torchrun --standalone --nproc_per_node=2 tools/ddp_paired.py --out "$OUT" ${DDP_PAIRED_ARGS:-} 2>"$OUT/ddp_paired.err" | tail -20
  tail -5 "$OUT/ddp_paired.err"
fi
if has bench; then
  python3 bench/run.py --out "$OUT" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log" | tail -40
fi
