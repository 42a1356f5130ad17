#!/usr/bin/env bash
# GPU engine device run 1: sanity (German 3 on the GPU vs compiled), then
# `coherence bench engines --engine gpu` (German 5, 6 without symmetry, 7 with, MESI dir 5).
set -u
C=$PWD/.devcarry
python3 -m pip install -q --no-index --no-deps --target /tmp/site $C/lark-*.whl $C/graphviz-*.whl || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$C/gpu_repo
cd $C/gpu_repo
{ nvidia-smi -L; nproc; free -g | head -2; gcc --version | head -1; python3 --version;
  python3 -c 'import cupy; print("cupy", cupy.__version__, cupy.cuda.runtime.runtimeGetVersion())'; } > $OUT/machine.txt 2>&1
cat $OUT/machine.txt
for e in gpu compiled; do
  timeout 120 python3 -m coherence.cli check specs/german.coh --engine $e --agents 3 --json > $OUT/sanity_$e.json 2> $OUT/sanity_$e.err
  echo "$e rc=$?"; python3 -c "import json;d=json.load(open('$OUT/sanity_$e.json'));print(d['stats'], d['verdict'])"; tail -3 $OUT/sanity_$e.err
done
timeout ${BENCH_S:-420} python3 -m coherence.cli bench engines --engine gpu --timeout 150 --json > $OUT/bench.json 2> $OUT/bench.err
echo "bench rc=$?"; tail -5 $OUT/bench.err
python3 -c "
import json; from coherence.engines.bench import table
print(table(json.load(open('$OUT/bench.json'))))" | tee $OUT/bench.txt
