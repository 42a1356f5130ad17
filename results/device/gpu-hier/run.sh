#!/usr/bin/env bash
# The GPU engine on the hierarchical specs (issue 20), one device call: `coherence check
# --engine gpu` against `--engine compiled` on the four bundled hierarchical specs, then the
# GPU tests (tests/test_gpu_device.py's hierarchical rows, tests/test_gpu_hierarchy.py).
#   usage (repository root, lark and graphviz wheels in .hwcarry/):
#     OUT=dir [BUDGET=540] bash results/device/gpu-hier/run.sh
# Each step starts only while the budget (seconds) lasts; run.log says what ran and when.
#   then, anywhere: python3 results/device/gpu-hier/table.py dir/checks.jsonl > dir/table.md
set -uo pipefail
export PYTHONUNBUFFERED=1
if ls .hwcarry/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .hwcarry/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
t0=$(date +%s)
B=${BUDGET:-540}
left() { local l=$(( B - ($(date +%s) - t0) )); echo $(( l > 10 ? l : 10 )); }
at() { echo "$1: rc=$2 at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/run.log"; }
{
  date -u; git log --oneline -1 2>/dev/null; nvidia-smi -L; nvcc --version | tail -1
  nproc; python3 --version; python3 -c "import cupy; print('cupy', cupy.__version__)"
  python3 -c "import z3; print('z3', z3.get_version_string())"
} > "$OUT/machine.txt" 2>&1
# (spec, size, --skip coherent?): 2 GPUs x 2 SMs without the coherence monitor, 2 x 1 with it
for spec in gpu_two_level multigpu_broadcast multigpu_broadcast_acked hmg; do
  for size in "2 2 nomon exact" "2 2 nomon off" "2 1 mon exact"; do
    set -- $size
    skip=(); [ "$3" = nomon ] && skip=(--skip coherent)
    sym=$4
    [ "$(left)" -gt 200 ] || { at "$spec $1x$2 $3 symmetry=$sym: skipped, no time left" 0; continue; }
    for engine in gpu compiled; do
      timeout 120 python3 -m coherence.cli check "specs/$spec.coh" -p gpus=$1 -p sms=$2 \
        ${skip[@]+"${skip[@]}"} --symmetry $sym --engine $engine --json > "$OUT/one.json" 2>> "$OUT/run.log"
      rc=$?
      python3 - "$OUT/one.json" "$spec" "$1x$2-$3" $sym $engine $rc >> "$OUT/checks.jsonl" <<'PY'
import json, sys
path, spec, size, sym, engine, rc = sys.argv[1:]
try:
    d = json.load(open(path))
except ValueError:
    d = {}
s = d.get("stats", {})
print(json.dumps({"spec": spec, "size": size, "symmetry": sym, "engine": engine,
                  "ran_on": d.get("engine"), "rc": int(rc), "verdict": d.get("verdict"),
                  "states": s.get("states"), "rules_fired": s.get("rules_fired"),
                  "depth": s.get("depth"), "seconds": s.get("seconds"),
                  "failures": sorted([f["property"], f["length"]] for f in d.get("failures", [])),
                  "notes": d.get("notes")}))
PY
      at "$spec $1x$2 $3 symmetry=$sym $engine" $rc
    done
  done
done
rm -f "$OUT/one.json"
export COHERENCE_CFLAGS=-O1  # the tests' compiled-engine builds
timeout $(( $(left) - 40 )) python3 -m pytest -q -p no:cacheprovider -o addopts="" -n 8 -rfEs \
  tests/test_gpu_device.py -k hierarchical --durations=8 > "$OUT/tests_device.log" 2>&1
at "pytest test_gpu_device.py -k hierarchical" $?
timeout $(( $(left) )) python3 -m pytest -q -p no:cacheprovider -o addopts="" -n 8 -rfEs \
  tests/test_gpu_hierarchy.py > "$OUT/tests_hierarchy.log" 2>&1
at "pytest test_gpu_hierarchy.py" $?
