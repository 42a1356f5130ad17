"""runs/s and steps/s of fuzz on passing configurations, CPU time (old or new code per PYTHONPATH)."""
import sys, time, json
from coherence.spec.load import load_spec
from coherence.testing.fuzz import fuzz
from coherence.testing import run as run_module
taken = [0]
real_take = run_module.Run.take
def take(self, out):
    taken[0] += 1
    return real_take(self, out)
run_module.Run.take = take
root = sys.argv[1]
for spec, over, budget in (("broadcast_invalidate_acked.coh", {"agents": 3}, 200),
                           ("msi_directory.coh", {}, 200),
                           ("broadcast_invalidate_acked.coh", {"agents": 8, "lines": 4, "capacity": 64}, 20)):
    m = load_spec(f"{root}/specs/{spec}", over)
    fuzz(m, budget=1)
    t = time.process_time()
    taken[0] = 0
    r = fuzz(m, budget=budget, seed=1)
    cpu = time.process_time() - t
    steps = taken[0]
    print(json.dumps({"spec": spec, "params": over, "verdict": r.verdict, "examples": r.stats.examples,
                      "steps": steps, "cpu_s": round(cpu, 2), "runs_per_cpu_s": round(r.stats.examples / cpu, 1), "steps_per_cpu_s": round(steps / cpu)}), flush=True)
