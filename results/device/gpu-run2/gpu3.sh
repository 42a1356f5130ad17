#!/usr/bin/env bash
# GPU engine device run 3 (short): the word-wise compare, German 5 and 6 without symmetry and
# MESI directory 5 on the GPU (counts must equal run 1's), in the bench's setting.
set -u
C=$PWD/.devcarry
python3 -m pip install -q --no-index --no-deps --target /tmp/site $C/lark-*.whl $C/graphviz-*.whl || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$C/gpu_repo
cd $C/gpu_repo
timeout 300 python3 -m coherence.cli bench engines --engine gpu --tools gpu --rows german:5,german:6,mesi_directory:5 --timeout 120 --json > $OUT/bench.json 2> $OUT/bench.err
echo "bench rc=$?"; tail -5 $OUT/bench.err
python3 -c "
import json; from coherence.engines.bench import table
print(table(json.load(open('$OUT/bench.json'))))" | tee $OUT/bench.txt
