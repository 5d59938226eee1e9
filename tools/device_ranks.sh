#!/bin/bash
# Multi-GPU checks on the device machine (2 or 4 GPUs). Everything it writes is packed into
# $OUT/ranks.tar.gz (the device tool brings back at most 8 files), a summary is printed last.
#   bash tools/device_ranks.sh WHAT[,WHAT...]
# WHAT: build | tests (tests/gpu/test_multirank.py) | alltests (pytest -m gpu tests/gpu) |
#       sym (symmetric FSDP2, 5 runs) | inject (DDP and FSDP2, rank 1 sleeping 20 ms before its
#       forward, each step synchronised: the whole sleep delays the others; INJECT_ON="host gpu"
#       also runs a 20 ms kernel on rank 1's GPU instead: a slower kernel) | truth (rank 1
#       sleeping before its backward on every other step only: tools/wait_truth.py holds dlpt's
#       wait against the ranks' own step times; TRUTH_AT=forward sleeps before the forward, TRUTH_ON=gpu delays the GPU instead) | twonode (two torchrun launchers as two nodes,
#       half the GPUs each, each in its own folder: no shared output directory) | paired
#       (tools/ddp_paired.py, DDP and FSDP2)
# NPROC (default: every GPU) sets the ranks, SYM_RUNS (default 5) the symmetric runs; DDP_PAIRED_ARGS passes options to ddp_paired.py;
# INJECT_FSDP_ONLY=1 and TRUTH_JOBS=fsdp2 leave the DDP jobs out.
set -o pipefail
what=${1:-build,tests}
has() { case ",$what," in *",$1,"*) return 0;; esac; return 1; }
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/dlpt-out}; mkdir -p "$OUT"
LOG=/tmp/ranks-out; rm -rf "$LOG"; mkdir -p "$LOG"
NGPU=$(nvidia-smi -L | wc -l)
NPROC=${NPROC:-$NGPU}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
nvidia-smi -L | tee "$LOG/gpu.txt"
env | grep -E 'NCCL_NVLS|MULTICAST|NVSHMEM_DISABLE' | tee -a "$LOG/gpu.txt"
# The tests' folders keep their sessions and reports; files over 4 MB (a model's checkpoint, a
# long timeline) stay behind: the device tool brings back 16 MB per file.
pack() { find "$LOG" -type f -size +4M -delete; tar -czf "$OUT/ranks.tar.gz" -C /tmp ranks-out; }
trap pack EXIT
if has build; then
  t0=$(date +%s)
  python3 -m pip install --no-build-isolation --no-deps -e . >"$LOG/build.log" 2>&1 || { tail -40 "$LOG/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
fi
# job NAME [dlpt options ...] SCRIPT [args ...]: a torchrun job under dlpt in its own folder.
job() {
  local name=$1; shift
  local dir=$LOG/$name; mkdir -p "$dir"
  (cd "$dir" && COLUMNS=140 timeout 300 torchrun --standalone --nproc_per_node="$NPROC" -m dlpt "$@") >"$dir/out.txt" 2>&1
  echo "== $name: exit $?"
  grep -E "straggler|waited for it|ddp_train: .*ms/step" "$dir/out.txt" | head -4
  pack  # after every job: a call cut off at its limit still brings back what ran
}
EX=$PWD/examples/ddp_train.py
# The FSDP2 job: host-bound on H100s (its Python sets the pace); FSDP_SIZE="--width 4096 --seq
# 1024" makes the GPU set it, where a delay on one rank is on every rank's critical path.
FSDP="--mode fsdp2 --layers 8 --width 1024 --seq 512 --batch 8 ${FSDP_SIZE:-}"
if has alltests; then
  python3 -m pytest -m gpu -q -rs -p no:cacheprovider --basetemp="$LOG/pytest" tests/gpu 2>&1 | tee "$LOG/gpu_tests.log" | tail -25
elif has tests; then
  python3 -m pytest -m gpu -q -rs -p no:cacheprovider --basetemp="$LOG/pytest" tests/gpu/test_multirank.py 2>&1 | tee "$LOG/multirank_tests.log" | tail -20
fi
if has sym; then
  for i in $(seq 1 "${SYM_RUNS:-5}"); do job "fsdp2-sym$i" --skip-first 5 -o run.json --html run.html "$EX" $FSDP --steps 30 --log-steps; done
fi
if has inject; then
  for on in ${INJECT_ON:-host}; do
    sfx=$([ "$on" = host ] || echo "-$on")
    at="--straggle 1 --straggle-ms 20 --straggle-at forward --straggle-on $on --log-steps"
    [ -n "${INJECT_FSDP_ONLY:-}" ] || job "ddp-inject$sfx" --skip-first 5 -o run.json "$EX" --mode ddp --steps 30 $at
    job "fsdp2-inject$sfx" --skip-first 5 -o run.json --html run.html "$EX" $FSDP --steps 30 $at
  done
fi
if has truth; then
  for m in ${TRUTH_JOBS:-ddp fsdp2}; do
    if [ $m = ddp ]; then cfg="--mode ddp"; else cfg=$FSDP; fi
    name="$m-truth${TRUTH_ON:+-$TRUTH_ON}"
    job "$name" --skip-first 5 -o run.json "$EX" $cfg --steps 40 --straggle 1 --straggle-ms 20 --straggle-every 2 \
      --straggle-at "${TRUTH_AT:-backward}" --straggle-on "${TRUTH_ON:-host}" --log-steps
    python3 tools/wait_truth.py "$LOG/$name/out.txt" "$LOG/$name"/run.rank*.json 2>&1 | tee "$LOG/$name/truth.txt"
  done
fi
if has twonode; then
  half=$((NGPU / 2)); port=$((29000 + RANDOM % 1000))
  for k in 0 1; do
    mkdir -p "$LOG/node$k"
    devs=$(seq -s, $((k * half)) $((k * half + half - 1)))
    (cd "$LOG/node$k" && CUDA_VISIBLE_DEVICES=$devs COLUMNS=140 timeout 300 torchrun --nnodes=2 --node_rank=$k \
      --nproc_per_node=$half --rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:$port -m dlpt --skip-first 5 \
      -o run.json "$EX" --mode ddp --steps 20 --straggle 1 --straggle-ms 20 >out.txt 2>&1; echo "node$k exit $?" >>out.txt) &
  done
  wait
  echo "== twonode:"; for k in 0 1; do ls "$LOG/node$k"; grep -E "across ranks|of [0-9]+ ranks|straggler:|missing|exit" "$LOG/node$k/out.txt"; done
fi
if has paired; then
  for m in "--mode ddp" "$FSDP"; do
    torchrun --standalone --nproc_per_node="$NPROC" tools/ddp_paired.py $m --out "$LOG" ${DDP_PAIRED_ARGS:-} \
      2>>"$LOG/ddp_paired.err" | grep -E "^\| [0-9]|paired overhead" | head -12
  done
fi
