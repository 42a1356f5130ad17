# The obligations a proof cache leaves, one process per obligation (per_goal.py), on the
# device's 16 cores: the cache with this run's records and one line per item come back in $OUT
# (results/infer/README.md, "Session 32").
# AUX: the aux lines; CACHE: the cache to resume from; LEFT: cache_left.py --goals output;
# ITEM_SECONDS, START_SECONDS, AFTER, MATCHING: per_goal.py --item-seconds, --seconds, --after,
# --goals-matching.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl) >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONHASHSEED=0
cp "$CACHE" $OUT/msi.proof-cache
nproc; date
timeout ${OUTER_SECONDS:-585} python3 results/infer/per_goal.py ${SPEC:-specs/msi_directory.coh} "$AUX" \
  $OUT/msi.proof-cache "$LEFT" --skip coherent --processes ${PROCESSES:-16} \
  --item-seconds ${ITEM_SECONDS:-270} --seconds ${START_SECONDS:-260} ${AFTER:+--after $AFTER} ${MATCHING:+--goals-matching $MATCHING} > $OUT/per_goal.jsonl 2> $OUT/stderr.txt
echo rc=$?; date
wc -l $OUT/msi.proof-cache
python3 -c "
import json,collections,sys
rows=[json.loads(l) for l in open('$OUT/per_goal.jsonl') if l.strip()]
c=collections.Counter((r.get('outcome'), (r.get('message') or '')[:20]) for r in rows[1:])
print(rows[0]); print(dict(c))
"
tail -3 $OUT/stderr.txt
