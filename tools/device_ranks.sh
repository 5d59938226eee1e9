#!/bin/bash
# Multi-GPU checks on the device machine (2 or 4 GPUs), logs and rank sessions under $OUT:
#   bash tools/device_ranks.sh WHAT[,WHAT...]
# WHAT: build | tests (pytest -m gpu on every GPU test) | sym (symmetric FSDP2, 3 runs) |
#       inject (DDP and FSDP2, rank 1 sleeping 20 ms before backward) | paired (tools/ddp_paired.py) |
#       alltests (pytest -m gpu tests/gpu, every test)
# NPROC (default: all GPUs) sets the ranks. Each job's rank sessions are packed into
# $OUT/jobs.tar.gz (with the paired results) for analysis on a machine without GPUs.
set -o pipefail
what=${1:-build,tests}
has() { case ",$what," in *",$1,"*) return 0;; esac; return 1; }
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/dlpt-out}; mkdir -p "$OUT"
NPROC=${NPROC:-$(nvidia-smi -L | wc -l)}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
nvidia-smi -L | tee "$OUT/gpu.txt"
env | grep -E 'NCCL_NVLS|MULTICAST|NVSHMEM_DISABLE' | tee -a "$OUT/gpu.txt"
if has build; then
  t0=$(date +%s)
  python3 -m pip install --no-build-isolation --no-deps -e . >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
fi
# job NAME [dlpt options --] script args: a torchrun job under dlpt in its own folder.
job() {
  local name=$1; shift
  local dir=/tmp/job-$name; rm -rf "$dir"; mkdir -p "$dir"
  (cd "$dir" && COLUMNS=140 timeout 300 torchrun --standalone --nproc_per_node="$NPROC" -m dlpt "$@") >"$OUT/$name.txt" 2>&1
  echo "== $name: exit $?"; grep -E "straggler|ranks within|waited|ddp_train: .*ms/step" "$OUT/$name.txt" | head -8
  mkdir -p /tmp/jobs && cp -r "$dir" /tmp/jobs/  # packed once at the end (8 files come back at most)
}
EX=$PWD/examples/ddp_train.py
FSDP="--mode fsdp2 --layers 8 --width 1024 --seq 512 --batch 8"
if has sym; then
  for i in 1 2 3 4; do job "fsdp2-sym$i" --skip-first 5 -o run.json --html run.html "$EX" $FSDP --steps 30 --log-steps; done

fi
if has inject; then
  job ddp-inject --skip-first 5 -o run.json "$EX" --mode ddp --steps 30 --straggle 1 --straggle-ms 20 --log-steps
  job fsdp2-inject --skip-first 5 -o run.json "$EX" $FSDP --steps 30 --straggle 1 --straggle-ms 20 --log-steps
fi
if has alltests; then :; elif has tests; then
  python3 -m pytest -m gpu -q -rs -x tests/gpu/test_multirank.py 2>&1 | tee "$OUT/multirank_tests.log" | tail -30
fi
if has alltests; then
  python3 -m pytest -m gpu -q -rs tests/gpu 2>&1 | tee "$OUT/gpu_tests.log" | tail -40
fi
if has paired; then
  torchrun --standalone --nproc_per_node="$NPROC" tools/ddp_paired.py --mode ddp --out /tmp/jobs ${DDP_PAIRED_ARGS:-} \
    2>"$OUT/ddp_paired_ddp.err" | tail -12
  torchrun --standalone --nproc_per_node="$NPROC" tools/ddp_paired.py $FSDP --out /tmp/jobs ${DDP_PAIRED_ARGS:-} \
    2>"$OUT/ddp_paired_fsdp2.err" | tail -12
fi
[ -d /tmp/jobs ] && tar -czf "$OUT/jobs.tar.gz" -C /tmp jobs
