#!/usr/bin/env bash
# The hardware harness on one GPU machine, in one call (device time is scarce): GPU tests,
# the bench, CPU-GPU litmus runs over the host link, then every catalogue test and variant in
# each environment (persistent harness) for what is left of the time. Everything lands in
# $OUT (at most 8 files).
#   usage: OUT=dir [BUDGET=400] [SECONDS_PER_RUN=0.2] [LINK_SECONDS=0.2] bash results/device/hw-h200/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
if ls .hwcarry/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .hwcarry/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
B=${BUDGET:-400}
S=${SECONDS_PER_RUN:-0.2}
L=${LINK_SECONDS:-0.2}
t0=$(date +%s)
left() { echo $(( B - ($(date +%s) - t0) )); }
{
  date -u; nvidia-smi -L; nvidia-smi topo -m; nvcc --version | tail -1; which cuobjdump
  nproc; lscpu | grep -E 'Model name|^CPU\(s\)'; python3 --version
  python3 -c "import cupy; print('cupy', cupy.__version__)"
} > "$OUT/machine.txt" 2>&1
timeout 90 python3 -m pytest -q -p no:cacheprovider -rs tests/test_hw_gpu.py \
  > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/run.log"
timeout 45 python3 -m coherence.cli hw bench --out "$OUT/bench.json" >> "$OUT/run.log" 2>&1
echo "bench: rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/run.log"
timeout 80 python3 -m coherence.cli hw run MP SB LB CoRR -V relaxed.sys -V acqrel.sys \
  -V acqrel.gpu -V fence.sys -V fence.gpu --place cpu-gpu --place peer --seconds "$L" \
  --instances 4 --out "$OUT/link.json" >> "$OUT/run.log" 2>&1
echo "hw run --place: rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/run.log"
if [ "$(left)" -gt 20 ]; then
  timeout "$(left)" python3 -m coherence.cli hw run all --seconds "$S" \
    --out "$OUT/litmus.json" --progress plain --progress-every 30 >> "$OUT/run.log" 2>&1
  echo "hw run: rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/run.log"
else
  echo "hw run: not run, $(left) s left" | tee -a "$OUT/run.log"
fi
