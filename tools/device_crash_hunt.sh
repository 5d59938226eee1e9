#!/bin/bash
# Hunts a rare native crash on the GPU machine: builds dlpt._C with AddressSanitizer (or plain),
# then runs one program under `python -m dlpt` many times, several at once, and keeps the logs of
# every run that did not exit 0 or that ASan reported on. Logs packed into $OUT/hunt.tar.gz.
#   HUNT_SECONDS=420 HUNT_JOBS=6 HUNT_MODES="exact lean" HUNT_ASAN=1 HUNT_ARGS="--step-on generate" \
#     bash tools/device_crash_hunt.sh PROGRAM.py [program args...]
# Under ASan, Python allocates through malloc (PYTHONMALLOC=malloc) so that a use of a freed
# Python object by dlpt's code (code objects, frames) is caught where it happens, not when
# glibc later trips over its own lists ("malloc(): unsorted double linked list corrupted").
set -o pipefail
prog=$1; shift; prog_args=("$@")
OUT=${OUT:-/tmp/dlpt-out}; mkdir -p "$OUT"
LOG=/tmp/hunt; rm -rf "$LOG"; mkdir -p "$LOG"
trap 'tar -czf "$OUT/hunt.tar.gz" -C /tmp hunt' EXIT
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} PYTHONFAULTHANDLER=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
nvidia-smi -L | tee "$LOG/gpu.txt"
t0=$(date +%s)
preload=""
if [ "${HUNT_ASAN:-1}" = 1 ]; then
  export DLPT_CMAKE_BUILD_DIR=/tmp/build-asan DLPT_BUILD_TYPE=RelWithDebInfo
  export CXXFLAGS="-fsanitize=address -fno-omit-frame-pointer" LDFLAGS="-fsanitize=address"
  # libstdc++ beside it: torch throws C++ exceptions, and ASan's __cxa_throw interceptor needs
  # the real one loaded before it.
  preload="$(c++ -print-file-name=libasan.so) $(c++ -print-file-name=libstdc++.so.6)"
fi
python3 -m pip install --no-build-isolation --no-deps -e . >"$LOG/build.log" 2>&1 || { tail -40 "$LOG/build.log"; exit 1; }
unset CXXFLAGS LDFLAGS
echo "build: $(( $(date +%s) - t0 )) s (asan=${HUNT_ASAN:-1} $preload)" | tee -a "$LOG/gpu.txt"
# Freed blocks are zero-filled. dlpt's check of a code object the host sampler saw without the
# GIL (type, a plausible reference count; frames/remote_stack.h) relies on what allocators leave
# in a freed block: glibc its own links over the first two words, pymalloc a link or 0 over the
# first. ASan instead keeps the block intact and writes its free context (a small number) over
# the first word, which passes for a reference count: without the fill, ASan reports the
# sampler's drain reading a freed code object that glibc or pymalloc would have shown as freed.
# (protect_shadow_gap=0: CUDA maps memory where ASan's shadow gap would be.)
asan_opts="detect_leaks=0:protect_shadow_gap=0:halt_on_error=1:alloc_dealloc_mismatch=0:detect_odr_violation=0"
asan_opts="$asan_opts:max_free_fill_size=65536:free_fill_byte=0:log_path=$LOG/asan"
one() {  # mode index
  local m=$1 d="$LOG/run-$1-$2"; mkdir -p "$d"
  local t=$(date +%s)
  if [ -n "$preload" ]; then
    (cd "$d" && DLPT_OPS=$m LD_PRELOAD="$preload" ASAN_OPTIONS="$asan_opts.$m.$2" PYTHONMALLOC=malloc \
      timeout 400 python3 -m dlpt --no-report -o "$d/s.json" $HUNT_ARGS "$prog" "${prog_args[@]}" >out.txt 2>err.txt)
  else
    (cd "$d" && DLPT_OPS=$m timeout 400 python3 -m dlpt --no-report -o "$d/s.json" $HUNT_ARGS "$prog" "${prog_args[@]}" >out.txt 2>err.txt)
  fi
  local rc=$?
  echo "$m $2 rc=$rc $(( $(date +%s) - t ))s" | tee -a "$LOG/summary.txt"
  rm -f "$d/s.json"
  [ $rc = 0 ] && [ ! -s "$d/err.txt" ] && rm -rf "$d"
  return 0
}
prog=$(realpath "$prog")
end=$(( $(date +%s) + ${HUNT_SECONDS:-420} ))
i=0
while [ "$(date +%s)" -lt "$end" ]; do
  for m in ${HUNT_MODES:-exact lean}; do
    for j in $(seq 1 $(( ${HUNT_JOBS:-6} / $(echo ${HUNT_MODES:-exact lean} | wc -w) ))); do
      i=$((i + 1)); one "$m" "$i" &
    done
  done
  wait
done
echo "== runs: $(wc -l <"$LOG/summary.txt"), not 0: $(grep -vc 'rc=0 ' "$LOG/summary.txt")"
ls "$LOG"/asan* 2>/dev/null && head -60 "$LOG"/asan*
for d in "$LOG"/run-*; do [ -d "$d" ] && { echo "== $d"; tail -30 "$d/err.txt"; }; done | head -150
