"""Swarm vs uniform at a larger configuration (4 agents, 2 lines): runs to failure."""
import json, sys
import coherence.testing  # noqa
from coherence.spec.load import load_spec
F = sys.modules["coherence.testing.fuzz"]
S = sys.modules["coherence.testing.strategy"]
mode = sys.argv[1]
if mode == "uniform":
    S.draw_swarm = lambda draw, t, a, l: S.Swarm.uniform(t, a, l)
for n in ["msi_dir_early_ack_dropped", "mesi_dir_e_owner_skips_dir_data", "msi_dir_stale_putm_accepted", "german_gnts_while_exclusive"]:
    try:
        m = load_spec(f"specs/mutants/{n}.coh", {"agents": 4, "lines": 2})
    except Exception as e:
        print(json.dumps({"spec": n, "error": str(e)[:100]}), flush=True); continue
    got = []
    for seed in range(3):
        r = F.fuzz(m, seed=seed)
        got.append(r.stats.examples_to_failure)
    print(json.dumps({"mode": mode, "spec": n, "runs_to_failure": got}), flush=True)
