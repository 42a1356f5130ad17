#!/bin/bash
# prove --agents any --jobs N on the device machine's CPU cores (planned in session 13, not run yet): the bundled
# proofs and German's --infer, each in a fresh process, N = 1 2 4 8 16.
set -u
cd "$(dirname "$0")/../../.."
pip install -q --no-deps .whl/lark-*.whl 2>/dev/null
python3 -c "import z3, attrs, rich; print('z3', z3.get_version_string())" || { echo "no z3 here"; exit 3; }
pip install -q --no-deps -e . >/dev/null 2>&1 || export PYTHONPATH=$PWD
nproc; python3 --version
out=${OUT:-/tmp/out}
for rep in 1 2; do
  for n in 1 2 4 8 16; do
    PYTHONHASHSEED=0 timeout 300 python3 -m coherence.cli bench prove --agents-list "" --json --jobs $n \
      --proofs specs/german.coh specs/broadcast_invalidate_acked.coh > $out/bundled_j${n}_r$rep.json 2>/dev/null
    PYTHONHASHSEED=0 timeout 300 python3 -m coherence.cli bench prove --infer --proof-timeout 600 --json --jobs $n \
      --proofs tests/specs/infer/german.coh > $out/infer_german_j${n}_r$rep.json 2>/dev/null
    python3 - "$out" "$n" "$rep" <<'PY'
import json, sys
out, n, rep = sys.argv[1:]
b = json.load(open(f"{out}/bundled_j{n}_r{rep}.json"))
i = json.load(open(f"{out}/infer_german_j{n}_r{rep}.json"))["infer"][0]
print(n, rep, [(p["spec"].split("/")[-1], p["verdict"], p["seconds"], p.get("jobs")) for p in b["proofs"]],
      "infer german", i["verdict"], i["stats"]["final"], i["stats"]["seconds"])
PY
  done
done
