#!/usr/bin/env bash
# The whole harness run on one GPU machine, in one call (device time is scarce):
# GPU tests, every catalogue test and variant, the bench. Results land in $OUT.
#   usage: OUT=dir LAUNCHES=50 bash results/run_h200.sh [TEST...]
set -uo pipefail
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
LAUNCHES=${LAUNCHES:-50}
nvidia-smi -L; nvcc --version | tail -1; which cuobjdump
python3 -c "import cupy; print('cupy', cupy.__version__)"
python3 -m pytest -q -p no:cacheprovider -rs tests/test_hw_gpu.py 2>&1 | tee "$OUT/gpu_tests.log"
python3 -m coherence.cli hw bench --out "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
python3 -m coherence.cli hw run "${@:-all}" --launches "$LAUNCHES" --out "$OUT/litmus.json" \
  --keep-build /tmp/hwbuild 2>&1 | tee "$OUT/run.log"
(cd /tmp/hwbuild && tar czf "$OUT/build.tar.gz" .) || true
