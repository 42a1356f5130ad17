# Each goal of GOALS (lines "ACTION<TAB>GOAL") at a fixed size (finite_sizes.py), 16 at a
# time on the device; every answer is a line of $OUT/finite.jsonl as soon as it is known
# (results/infer/README.md, "Session 29"). AUX: the aux lines; SIZES: finite_sizes.py --sizes.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl) >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONHASHSEED=0 AUX SIZES
nproc; date
: > $OUT/finite.jsonl
timeout ${SECONDS_CAP:-300} xargs -d '\n' -P ${PROCESSES:-16} -I{} bash -c \
  'IFS=$'"'"'\t'"'"' read -r a g <<< "{}"; python3 results/infer/finite_sizes.py specs/msi_directory.coh "$AUX" "$a" --goal "$g" --sizes "$SIZES" >> $OUT/finite.jsonl 2>> $OUT/stderr.txt' \
  < "$GOALS"
echo rc=$?; date
wc -l $OUT/finite.jsonl
python3 -c "
import json,collections,os
rows=[json.loads(l) for l in open(os.environ['OUT']+'/finite.jsonl')]
print(collections.Counter(r['answer'] for r in rows))
[print(json.dumps(r)) for r in rows if r['answer']!='unsat']"
tail -3 $OUT/stderr.txt 2>/dev/null
