# MSI's final proof, one process per action (per_action.py), on the device's 16 cores,
# resuming from a proof cache: the cache with this run's records, each action's outcome line
# and the log come back in $OUT (results/infer/README.md, "Session 29").
# AUX: the aux lines; CACHE: the cache to resume from; ACTIONS: a JSONL whose first line is
# {"actions": [...]} (per_action.py --actions-from); SECONDS_CAP: per_action.py --seconds.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl) >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONHASHSEED=0
cp "$CACHE" $OUT/msi.proof-cache
mkdir -p $OUT/actions
nproc; date
timeout $(( ${SECONDS_CAP:-450} + 100 )) python3 results/infer/per_action.py specs/msi_directory.coh "$AUX" \
  $OUT/msi.proof-cache --skip coherent --processes ${PROCESSES:-16} --seconds ${SECONDS_CAP:-450} \
  --actions-from "$ACTIONS" --out-dir $OUT/actions > $OUT/per_action.jsonl 2> $OUT/stderr.txt
echo rc=$?; date
wc -l $OUT/msi.proof-cache
cat $OUT/per_action.jsonl | cut -c1-400
tail -5 $OUT/stderr.txt
