# One round of Houdini at a fixed size (finite_round.py) over every action of SPEC with the
# lines of AUX, in PROCESSES shares at once on the device; each action's answer is a line of
# $OUT/round.jsonl as soon as it is known (results/infer/README.md, "Session 30").
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl) >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONHASHSEED=0
P=${PROCESSES:-16}
nproc; date
: > $OUT/round.jsonl
for k in $(seq 0 $((P - 1))); do
  timeout ${SECONDS_CAP:-500} python3 results/infer/finite_round.py "$SPEC" "$AUX" \
    --agents ${AGENTS:-5} --share $k/$P ${SKIP:+--skip $SKIP} ${GROUPS:+--groups $GROUPS} >> $OUT/round.jsonl 2>> $OUT/stderr.txt &
done
wait
date
python3 -c "
import json,os
rows=[json.loads(l) for l in open(os.environ['OUT']+'/round.jsonl')]
print(len(rows), 'actions answered;', sum(1 for r in rows if r['broken']), 'break a line')
for r in sorted(rows, key=lambda r: r['group']): print(r['group'], r['action'], r['last'], r['broken'], r['seconds'])"
tail -3 $OUT/stderr.txt 2>/dev/null
