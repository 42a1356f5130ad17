# MSI's final proof for every N on the device's 16 cores, resuming from a proof cache; the
# cache (with this run's records) comes back in $OUT (results/infer/README.md, "Session 24").
# AUX: the aux lines (default msi_directory_plus.aux); CACHE: the cache to resume from
# (default msi_directory_s24.proof-cache; none: start empty).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl) >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONHASHSEED=0
CACHE=${CACHE:-results/infer/msi_directory_s24.proof-cache}
if [ "$CACHE" = none ]; then : > $OUT/msi.proof-cache; else cp "$CACHE" $OUT/msi.proof-cache; fi
nproc; date
timeout 570 python3 -m coherence.cli prove specs/msi_directory.coh --aux ${AUX:-results/infer/msi_directory_plus.aux} \
  --agents any --skip coherent --jobs 16 --proof-cache $OUT/msi.proof-cache --json --timeout ${SECONDS_CAP:-450} \
  --progress never > $OUT/result.json 2> $OUT/stderr.txt
echo rc=$?; date
wc -l $OUT/msi.proof-cache
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/result.json"))
r = d["results"][0] if "results" in d else d
print(json.dumps({k: r.get(k) for k in ("verdict", "reason", "seconds", "jobs", "cached")}))
print("proved", len(r.get("proved") or []), "ctis", len(r.get("counterexamples_to_induction") or []))
PY
tail -5 $OUT/stderr.txt
