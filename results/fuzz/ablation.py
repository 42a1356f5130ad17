"""Swarm vs uniform (no swarm) on the mutants that needed the most runs: runs to failure."""
import json, sys
import coherence.testing  # noqa
from coherence.spec.load import load_spec
F = sys.modules["coherence.testing.fuzz"]
S = sys.modules["coherence.testing.strategy"]
real = S.draw_swarm
mode = sys.argv[1]
def uniform(draw, t, a, l):
    return S.Swarm.uniform(t, a, l)
if mode == "uniform":
    S.draw_swarm = uniform
for n in ["mesi_dir_e_owner_skips_dir_data", "mesi_dir_stale_pute_accepted", "msi_dir_owner_skips_dir_writeback", "mesi_dir_ei_a_stalls_fwd_getm", "msi_dir_stale_putm_accepted", "msi_dir_early_ack_dropped"]:
    m = load_spec(f"specs/mutants/{n}.coh", {})
    got = []
    for seed in range(3):
        r = F.fuzz(m, seed=seed)
        got.append(r.stats.examples_to_failure)
    print(json.dumps({"mode": mode, "spec": n, "runs_to_failure": got}), flush=True)
