#!/bin/bash
# prove --agents any --jobs N on the device machine's CPU cores: the bundled proofs and
# German's --infer, each in a fresh process, N in $JOBS_LIST (default 1 2 4 8 16), twice.
# The wheels in .whl (carried: `run` with carry [".whl"]) are installed first, offline.
set -u
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
exec > >(tee "$out/run.log") 2>&1
jobs_list=${JOBS_LIST:-1 2 4 8 16}
reps=${REPS:-1 2}

# Wheels: z3-solver, lark, graphviz (not in the device image), and attrs, rich, hypothesis
# and their needs (in the image, carried anyway, the versions CI uses). Installed into
# /tmp/site, ahead on PYTHONPATH, so the image's own environment is left as it is.
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl 2>&1 | grep -v -i warning
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
# The package from the checkout itself (no pip install -e: that would need the network).
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
python3 -c "import z3, attrs, rich, lark, hypothesis; print('z3', z3.get_version_string())" \
  || { echo "no z3 here"; exit 3; }

echo "nproc $(nproc)"
lscpu | grep 'Model name'
python3 --version
python3 -c "import z3, attrs, rich, lark, hypothesis, os
print('z3', z3.get_version_string(), '| attrs', attrs.__version__, '| lark', lark.__version__,
      '| hypothesis', hypothesis.__version__, '| sched_getaffinity', len(os.sched_getaffinity(0)))"
grep -E '^(MemTotal|MemAvailable)' /proc/meminfo
echo "git $(git rev-parse --short HEAD 2>/dev/null) jobs_list '$jobs_list' reps '$reps'"

# Everything goes into one folder, packed into one tarball at the end: `run` brings back at
# most 8 files from $OUT, and this makes 4 per N and repetition.
raw=$(mktemp -d)
for rep in $reps; do
  for n in $jobs_list; do
    t0=$(date +%s.%N)
    PYTHONHASHSEED=0 timeout 300 python3 -m coherence.cli bench prove --agents-list "" --json --jobs $n \
      --proofs specs/german.coh specs/broadcast_invalidate_acked.coh \
      > $raw/bundled_j${n}_r$rep.json 2> $raw/bundled_j${n}_r$rep.err
    rc_b=$?
    t1=$(date +%s.%N)
    PYTHONHASHSEED=0 timeout 300 python3 -m coherence.cli bench prove --infer --proof-timeout 600 --json --jobs $n \
      --proofs tests/specs/infer/german.coh \
      > $raw/infer_german_j${n}_r$rep.json 2> $raw/infer_german_j${n}_r$rep.err
    rc_i=$?
    t2=$(date +%s.%N)
    awk -v r=$rep -v n=$n -v rb=$rc_b -v ri=$rc_i -v a=$t0 -v b=$t1 -v c=$t2 \
      'BEGIN { printf "rep %s N %s bundled_rc %s bundled_wall %.3f infer_rc %s infer_wall %.3f\n", r, n, rb, b - a, ri, c - b }' >> $raw/wall.txt
    python3 - "$raw" "$n" "$rep" "$rc_b" "$rc_i" "$t0" "$t1" "$t2" <<'PY'
import json, sys
raw, n, rep, rc_b, rc_i = sys.argv[1:6]
t0, t1, t2 = map(float, sys.argv[6:9])
line = [f"N={n} rep={rep}"]
try:
    b = json.load(open(f"{raw}/bundled_j{n}_r{rep}.json"))
    line.append(str([(p["spec"].split("/")[-1], p["verdict"], p["seconds"], p.get("jobs"))
                     for p in b["proofs"]]))
except Exception as e:  # a timeout or a crash: say so and go on
    line.append(f"bundled: no JSON (rc {rc_b}: {e!r})")
line.append(f"bundled wall {t1 - t0:.2f}s")
try:
    i = json.load(open(f"{raw}/infer_german_j{n}_r{rep}.json"))["infer"][0]
    line.append(f"infer german {i['verdict']} final={i['stats']['final']} "
                f"total={i['stats']['seconds'].get('total')} jobs={i.get('jobs')}")
except Exception as e:
    line.append(f"infer: no JSON (rc {rc_i}: {e!r})")
line.append(f"infer wall {t2 - t1:.2f}s")
print(" | ".join(line), flush=True)
PY
  done
done
tar -C "$raw" -czf "$out/prove-jobs.tar.gz" .
cp $raw/wall.txt "$out/wall.txt"
ls -la "$out"
