#!/usr/bin/env bash
# GPU engine device run 2: tests/test_gpu_device.py (every spec and mutant at 2-4 agents, GPU vs compiled)
set -u
C=$PWD/.devcarry
python3 -m pip install -q --no-index --no-deps --target /tmp/site $C/lark-*.whl $C/graphviz-*.whl || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$C/gpu_repo COHERENCE_CFLAGS=-O1
cd $C/gpu_repo
timeout 500 python3 -m pytest -p no:cacheprovider -q -n 16 -m gpu tests/test_gpu_device.py -rfE --durations=15 > $OUT/tests.log 2>&1
echo "pytest rc=$?"; tail -40 $OUT/tests.log
