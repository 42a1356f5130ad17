"""The persistent and link harnesses without a GPU: outcome buckets, the location hash (Python
twin against the C text, compiled here), launch planning, environments, mutation scores,
placements and the "not run: 1 GPU" path, and the C helper's CPU agents run for real."""

from __future__ import annotations

import ctypes
import json
import platform
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from coherence.cli import main
from coherence.errors import SpecError
from coherence.hw import cuda_gen, link_gen
from coherence.hw.cbuild import build_shared
from coherence.hw.environments import ENVIRONMENTS, environment
from coherence.hw.link import LinkOptions, entries, run_link
from coherence.hw.mutation import forbidden_bounds, mutation_scores
from coherence.hw.outcomes import Codec, codec
from coherence.hw.placement import (
    Placement,
    check,
    cpu_gpu_plans,
    parse_placement,
    peer_pairs,
    peer_plans,
    reachable,
)
from coherence.hw.plan import assign_roles, blocks_per_sm, grid, next_iterations
from coherence.hw.report import environment_scores, rows, scores_markdown
from coherence.hw.slots import SLOT_C, slot
from coherence.litmus.catalogue import find_test, load_catalogue
from coherence.litmus.program import holds, outcome_dict
from coherence.litmus.sc import sc_outcomes
from coherence.litmus.variants import apply_variant

SPECS = Path(__file__).resolve().parent.parent / "specs"
X86 = platform.machine() in ("x86_64", "AMD64")


# ------------------------------------------------------------------ outcome buckets


def test_codec_round_trip_and_overflow() -> None:
    c = Codec(("1:r0", "1:r1", "x", "y"), 2)
    assert c.buckets == 16 and c.size == 17
    for b in range(16):
        values = c.decode(b)
        assert values is not None and c.encode(values) == b
    assert c.encode((1, 0, 1, 1)) == 1 + 4 + 8
    assert c.text(13) == "1:r0=1 1:r1=0 x=1 y=1"
    assert c.encode((0, 2, 0, 0)) == 16 and c.decode(16) is None  # out of range: overflow
    hist, over = c.histogram([0] * 13 + [5, 0, 7] + [3])
    assert hist == {"1:r0=1 1:r1=0 x=1 y=1": 5, "1:r0=1 1:r1=1 x=1 y=1": 7} and over == 3
    with pytest.raises(ValueError):
        c.histogram([0] * 16)


def test_every_catalogue_test_fits_the_histogram() -> None:
    for t in load_catalogue():
        c = codec(t)
        assert c.names == tuple(t.outcome_names())
        for o in sc_outcomes(t):  # every SC outcome has its own bucket
            b = c.encode(o)
            assert b < c.buckets and c.decode(b) == o


# ------------------------------------------------------------------ location hash


def _compile_slot_table(tmp_path: Path) -> list[int]:
    src = tmp_path / "slot.c"
    src.write_text("#include <stdio.h>\n#define CO_FN static inline\n" + SLOT_C + r"""
int main(void) {
  for (unsigned seed = 0; seed < 3; ++seed)
    for (unsigned inst = 0; inst < 5; ++inst)
      for (unsigned it = 0; it < 7; ++it)
        for (unsigned k = 0; k < 3; ++k) printf("%u\n", co_slot(seed * 977u, inst, it, k, 4u, 3u));
  return 0;
}
""")
    exe = tmp_path / "slot"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(src)], check=True)
    return [int(x) for x in subprocess.run([str(exe)], check=True, capture_output=True,
                                           text=True).stdout.split()]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_slot_hash_python_twin_matches_the_c_text(tmp_path: Path) -> None:
    got = _compile_slot_table(tmp_path)
    want = [slot(seed * 977, inst, it, k, 4, 3) for seed in range(3) for inst in range(5)
            for it in range(7) for k in range(3)]
    assert got == want


def test_slots_are_distinct_inside_the_instance_region_and_move() -> None:
    for nl in (1, 2, 3):
        for spread in (1, 4, 8):
            s = nl * spread
            for inst in range(4):
                seen = set()
                for it in range(50):
                    slots = [slot(7, inst, it, k, spread, nl) for k in range(nl)]
                    assert len(set(slots)) == nl
                    assert all(inst * s <= x < (inst + 1) * s for x in slots)
                    seen.add(tuple(slots))
                # placements change from iteration to iteration
                assert len(seen) >= min(s, 8)


# ------------------------------------------------------------------ kernels


def test_persistent_kernel_source() -> None:
    src = cuda_gen.kernel_source(apply_variant(find_test("MP"), "relaxed.gpu"))
    assert "__global__ void litmus_persistent(" in src
    assert "probe_role0" in src and "probe_role1" in src
    assert "#define HB 17" in src  # 2^4 outcomes + overflow
    assert src.count("co_barrier(&bar[inst]") == 2  # start and end of every iteration
    assert "co_barrier_relaxed" not in src.split("__global__ void litmus_persistent")[1]
    assert "atomicAdd(&shist[(shared_sm ? HB : 0) + b], 1u);" in src
    assert "atomicAdd(&hist[i], (unsigned long long)shist[i]);" in src
    assert "v = q1.x; over |= (v >= 2u); b += v * 1u;" in src
    assert "v = co_ld_final(l[1]); over |= (v >= 2u); b += v * 8u;" in src
    assert "red.release.gpu.global.add.u32" in src and "fence.acq_rel.gpu;" in src
    cached = cuda_gen.kernel_source(apply_variant(find_test("MP+cached"), "weak"))
    body = cached.split("__global__ void litmus_persistent")[1]
    # the warm load, then a relaxed barrier that keeps the line in the reader's L1
    assert body.index('ld.global.ca.u32') < body.index("co_barrier_relaxed(&bar[inst]")


def test_kernel_refuses_tests_beyond_its_limits() -> None:
    t = find_test("MP")
    big = type(t)(t.name, t.doc, ("a", "b", "c", "d"), (), (), t.threads, t.condition)
    with pytest.raises(ValueError, match="at most 3 locations"):
        cuda_gen.kernel_source(big)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
@pytest.mark.parametrize(("name", "variant"), [("MP+cached", "weak"), ("IRIW", "fence.sys")])
def test_generated_cuda_compiles_with_nvcc(tmp_path: Path, name: str, variant: str) -> None:
    t = apply_variant(find_test(name), variant)
    for i, src in enumerate((cuda_gen.kernel_source(t), link_gen.cuda_source(t),
                             link_gen.ping_cuda_source())):
        cu = tmp_path / f"k{i}.cu"
        cu.write_text(src)
        done = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(tmp_path / "k.cubin"),
                               str(cu)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_c_mapping_of_each_annotation() -> None:
    sb = apply_variant(find_test("SB"), "fence.sys")
    assert "atomic_thread_fence(memory_order_seq_cst);" in link_gen.c_role(sb, 0)
    mp = apply_variant(find_test("MP"), "acqrel.sys")
    assert ("atomic_store_explicit((_Atomic uint32_t*)l[1], 1u, memory_order_release);"
            in link_gen.c_role(mp, 0))
    assert ("out[0] = atomic_load_explicit((_Atomic uint32_t*)l[1], memory_order_acquire);"
            in link_gen.c_role(mp, 1))
    weak = apply_variant(find_test("MP"), "weak")
    assert "out[1] = *(volatile uint32_t*)l[0];" in link_gen.c_role(weak, 1)
    cta = apply_variant(find_test("MP"), "fence.cta")
    assert "atomic_signal_fence(memory_order_seq_cst);" in link_gen.c_role(cta, 0)
    dep = apply_variant(find_test("LB+data"), "relaxed.sys")
    assert "l[1], out[0], memory_order_relaxed);" in link_gen.c_role(dep, 0)


# ------------------------------------------------------------------ planning


def test_blocks_per_sm_limits() -> None:
    assert blocks_per_sm(256, 32, 0) == 8  # threads: 2048 / 256
    assert blocks_per_sm(256, 40, 0) == 6  # registers: 65536 / (40 * 256)
    assert blocks_per_sm(256, 33, 0) == 6  # 33 registers are allocated as 40
    assert blocks_per_sm(64, 16, 0) == 32  # the block limit
    assert blocks_per_sm(256, 32, 100 * 1024) == 2  # shared memory
    with pytest.raises(ValueError):
        blocks_per_sm(100, 32, 0)


def test_grid_and_role_assignment() -> None:
    g = grid(4, 2, 64, 3, 0.5)
    assert g.threads == 512 and g.instances == 256 // 3 and g.stress_threads == 512 - 255
    inst_of, role_of = assign_roles(np.random.default_rng(1), g)
    assert (inst_of == -1).sum() == g.stress_threads
    pairs = sorted(zip(inst_of[inst_of >= 0].tolist(), role_of[inst_of >= 0].tolist(),
                       strict=True))
    assert pairs == [(i, r) for i in range(g.instances) for r in range(3)]
    again = assign_roles(np.random.default_rng(2), g)[0]
    assert not np.array_equal(inst_of, again)  # redrawn every launch
    with pytest.raises(ValueError):
        grid(4, 2, 64, 3, 0.0)


def test_warp_placement() -> None:
    g = grid(4, 2, 64, 3, 1.0, "warp")
    assert g.unit == 32 and g.instances == (512 // 32) // 3 * 32 == 160
    inst_of, role_of = assign_roles(np.random.default_rng(3), g)
    warps_inst = inst_of.reshape(-1, 32)
    warps_role = role_of.reshape(-1, 32)
    used = (warps_inst >= 0).all(axis=1)
    assert used.sum() == 15 and ((warps_inst < 0).all(axis=1) | used).all()
    # a warp plays one role, for the 32 instances of one group, lanes shuffled
    for w in np.flatnonzero(used):
        assert len(set(warps_role[w].tolist())) == 1
        group = set((warps_inst[w] // 32).tolist())
        assert len(group) == 1 and sorted(warps_inst[w] % 32) == list(range(32))
    pairs = sorted(zip(inst_of[inst_of >= 0].tolist(), role_of[inst_of >= 0].tolist(),
                       strict=True))
    assert pairs == [(i, r) for i in range(g.instances) for r in range(3)]
    shuffled = [w for w in np.flatnonzero(used) if list(warps_inst[w] % 32) != list(range(32))]
    assert shuffled  # lanes are matched to instances at random
    with pytest.raises(ValueError, match="placement"):
        grid(4, 2, 64, 3, 1.0, "block")


def test_next_iterations_aims_at_the_launch_length_and_the_time_left() -> None:
    assert next_iterations(16, 1.6, 0.1, 10.0) == 1000  # 0.1 ms per iteration
    assert next_iterations(16, 1.6, 0.1, 0.01) == 100  # only 10 ms left
    assert next_iterations(16, 1.6, 0.1, -1.0) == 1
    assert next_iterations(1, 0.0, 1.0, 10.0, most=50) == 50


def test_environments() -> None:
    assert list(ENVIRONMENTS) == ["plain", "barrier", "scatter", "stress"]
    assert environment("scatter").placement == "thread"
    assert environment("barrier").placement == "warp"
    assert environment("stress").stress_lines > 0 and environment("plain").jitter_cycles > 0
    assert environment("barrier").jitter_cycles == 0 and environment("barrier").stress_lines == 0
    with pytest.raises(SpecError, match="unknown environment 'nosuch'"):
        environment("nosuch")


# ------------------------------------------------------------------ mutation score


def test_mutation_scores_and_forbidden_bounds() -> None:
    allowed = {("MP", "weak"): True, ("SB", "weak"): True, ("MP", "acqrel.gpu"): False}
    observed = {"plain": {("MP", "weak"): 0, ("SB", "weak"): 4, ("MP", "acqrel.gpu"): 0},
                "stress": {("MP", "weak"): 9, ("SB", "weak"): 2, ("MP", "acqrel.gpu"): 0}}
    scores = {s.environment: s for s in mutation_scores(observed, allowed)}
    assert (scores["plain"].mutants, scores["plain"].killed) == (2, 1)
    assert scores["plain"].missed == ("MP weak",) and scores["plain"].score == 0.5
    assert scores["stress"].score == 1.0
    strict = {s.environment: s for s in mutation_scores(observed, allowed, threshold=3)}
    assert strict["stress"].missed == ("SB weak",)
    instances = {"plain": dict.fromkeys(observed["plain"], 1_000_000),
                 "stress": dict.fromkeys(observed["stress"], 2_000_000)}
    bounds = forbidden_bounds(observed, instances, allowed)
    assert list(bounds) == [("MP", "acqrel.gpu")]
    assert bounds[("MP", "acqrel.gpu")]["instances"] == 3_000_000
    assert bounds[("MP", "acqrel.gpu")]["rate_bound"] == pytest.approx(1e-6)
    assert mutation_scores({"plain": {("MP", "acqrel.gpu"): 0}}, allowed)[0].score is None


def test_report_scores_environments_from_a_schema_2_file(tmp_path: Path) -> None:
    def row(variant: str, env: str, hist: dict[str, int]) -> dict:
        return {"test": "MP", "variant": variant, "environment": env, "timeouts": 0,
                "distinct_sm": hist, "shared_sm": {}, "sass": {"checked": False}}
    sc = {"1:r0=0 1:r1=0 x=1 y=1": 500, "1:r0=1 1:r1=1 x=1 y=1": 500}
    weak = {**sc, "1:r0=1 1:r1=0 x=1 y=1": 3}
    doc = {"schema": 2, "results": [row("weak", "plain", sc), row("weak", "stress", weak),
                                    row("acqrel.gpu", "plain", sc),
                                    row("acqrel.gpu", "stress", sc)]}
    table = rows([doc], [str(SPECS / "gpu_write_through.coh")], core="pipelined")
    assert [r["where"] for r in table] == ["plain", "stress", "plain", "stress"]
    scores = environment_scores(table, "gpu_write_through")
    by_env = {s["environment"]: s for s in scores["scores"]}
    assert by_env["plain"]["score"] == 0.0 and by_env["stress"]["score"] == 1.0
    assert scores["forbidden"] == [{"test": "MP", "variant": "acqrel.gpu", "instances": 2000,
                                    "seen": 0, "rate_bound": 3 / 2000}]
    md = scores_markdown(scores)
    assert "| plain | 1 | 0 | 0.00 | MP weak |" in md and "| stress | 1 | 1 | 1.00 | - |" in md
    with pytest.raises(SpecError, match="reference model 'nosuch'"):
        environment_scores(table, "nosuch")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    assert main(["hw", "report", str(path), "--model", str(SPECS / "gpu_write_through.coh"),
                 "--core", "pipelined"]) == 0


# ------------------------------------------------------------------ placements


def test_cpu_gpu_plans() -> None:
    plans = cpu_gpu_plans(2)
    assert [p.label() for p in plans] == ["cpu+gpu0 on pinned", "gpu0+cpu on pinned",
                                          "cpu+gpu0 on managed", "gpu0+cpu on managed"]
    assert [p.cpu_roles for p in cpu_gpu_plans(4, ("pinned",))] == [[0], [1], [2], [3]]


def test_peer_plans_need_two_gpus_with_peer_access() -> None:
    assert peer_pairs([[True]]) == ([], "not run: 1 GPU")
    assert peer_plans(2, [[True]]) == ([], "not run: 1 GPU")
    assert peer_plans(2, [[True, False], [False, True]])[1] == (
        "not run: no two of the 2 GPUs have peer access")
    plans, why = peer_plans(3, [[True, True], [True, True]])
    assert why is None
    assert [p.label() for p in plans] == [
        "gpu0+gpu1+gpu0 on gpu1", "gpu0+gpu1+gpu0 on gpu0",
        "gpu1+gpu0+gpu1 on gpu0", "gpu1+gpu0+gpu1 on gpu1"]
    # GPUs 0 and 1 see each other, 2 sees nobody
    three = [[True, True, False], [True, True, False], [False, False, True]]
    assert peer_pairs(three)[0] == [(0, 1), (1, 0)]


def test_reachability_and_placement_checks() -> None:
    peer = [[True, True, False], [True, True, False], [False, False, True]]
    assert reachable("cpu", "host", peer) and not reachable("gpu0", "host", peer)
    assert reachable("gpu2", "pinned", peer) and not reachable("cpu", "gpu0", peer)
    assert reachable("gpu1", "gpu0", peer) and not reachable("gpu2", "gpu0", peer)
    check(parse_placement("gpu0+gpu1@gpu1"), 3, peer)
    with pytest.raises(SpecError, match="gpu2 cannot reach gpu0 memory"):
        check(parse_placement("gpu2+gpu0@gpu0"), 3, peer)
    with pytest.raises(SpecError, match="this machine has 1 GPU"):
        check(parse_placement("cpu+gpu1@pinned"), 1, [[True]])
    assert parse_placement("cpu+gpu0@managed") == Placement(("cpu", "gpu0"), "managed")
    for bad in ("cpu+gpu0", "cpu+tpu0@pinned", "cpu@disk", "+@pinned"):
        with pytest.raises(SpecError, match="placement"):
            parse_placement(bad)


def test_entries_per_agent() -> None:
    e = entries(Placement(("cpu", "gpu0", "cpu"), "pinned"), 2)
    assert e["cpu"][0].tolist() == [0, 0, 1, 1] and e["cpu"][1].tolist() == [0, 2, 0, 2]
    assert e["gpu0"][0].tolist() == [0, 1] and e["gpu0"][1].tolist() == [1, 1]


# ------------------------------------------------------------------ the C helper, for real

needs_cc = pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None,
                              reason="no C compiler")


@needs_cc
@pytest.mark.parametrize("name", ["MP", "SB", "MP+cached", "LB+data"])
def test_cpu_agents_run_the_protocol(name: str) -> None:
    """Every role on a host thread: each iteration is counted once, every outcome is one the
    program can produce (values in range); fenced SB, and MP, are never weak on x86-TSO."""
    variant = "fence.sys" if name == "SB" else "acqrel.sys"
    t = apply_variant(find_test(name), variant)
    opts = LinkOptions(seconds=0.05, instances=1, first_iterations=300, pin_cpus=False)
    res = run_link(t, Placement(("cpu",) * len(t.threads), "host"), opts)
    assert res.timeouts == 0 and res.overflow == 0
    assert res.instances == res.iterations >= 300
    c = codec(t)
    outcomes = {c.encode(tuple(int(kv.split("=")[1]) for kv in k.split())) for k in
                res.distinct_sm}
    assert all(b < c.buckets for b in outcomes)
    if X86 and name in ("MP", "SB"):
        for k in res.distinct_sm:
            o = tuple(int(kv.split("=")[1]) for kv in k.split())
            assert not holds(t.condition, outcome_dict(t, o)), k


@needs_cc
def test_ping_helper_times_out_without_a_partner() -> None:
    lib = ctypes.CDLL(str(build_shared(link_gen.ping_c_source())))
    lib.co_pingpong.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
    flags = np.zeros(64, dtype=np.uint32)
    assert lib.co_pingpong(flags.ctypes.data, flags.ctypes.data + 128, 10, 2_000_000) == -1
    flags[0] = 1  # the partner pinged once: answered, then the wait for ping 2 times out
    assert lib.co_pingpong(flags.ctypes.data, flags.ctypes.data + 128, 2, 2_000_000) == -1
    assert flags[32] == 1


# ------------------------------------------------------------------ the command line


@needs_cc
def test_hw_run_place_on_host_cpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "link.json"
    assert main(["hw", "run", "SB", "-V", "fence.sys", "--place", "cpu+cpu@host", "--seconds",
                 "0.05", "--instances", "1", "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["results_file"] == str(out) and doc["complete"] and doc["not_run"] == []
    (r,) = doc["link_results"]
    assert r["placement"] == "cpu+cpu@host" and r["instances"] > 0 and r["timeouts"] == 0
    assert json.loads(out.read_text())["link_results"] == doc["link_results"]


def test_hw_run_peer_on_one_gpu_says_not_run(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    """On a one-GPU machine --place peer reports "not run: 1 GPU" and runs nothing."""
    import coherence.commands.hw as hwcmd
    import coherence.hw.harness as harness

    monkeypatch.setattr(hwcmd, "_need_cupy", lambda: None)
    monkeypatch.setattr(hwcmd, "_peer_matrix", lambda: [[True]])
    monkeypatch.setattr(harness, "provenance", lambda options: {"gpus": 1})
    assert main(["hw", "run", "MP", "--place", "peer", "--out", str(tmp_path / "p.json"),
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["not_run"] == [{"place": "peer", "why": "not run: 1 GPU"}]
    assert doc["link_results"] == []


@pytest.mark.parametrize(("argv", "message"), [
    (["MP", "--env", "nosuch"], "unknown environment"),
    (["IRIW", "--place", "cpu+gpu0@pinned"], "has 2 agents; IRIW has 4 roles"),
    (["MP", "--place", "cpu+gpu0"], "expected AGENT+AGENT...@MEMORY"),
])
def test_hw_run_bad_options(argv: list[str], message: str,
                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hw", "run", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
@pytest.mark.parametrize("name", ["IRIW", "R", "LB+data"])
def test_generated_bucket_code_agrees_with_the_decoder(tmp_path: Path, name: str) -> None:
    """The bucket arithmetic the kernels and the C helper compile (one generator) gives, for
    every outcome and for out-of-range values, the bucket ``Codec`` decodes."""
    t = find_test(name)
    c = codec(t)
    regs = cuda_gen.reg_positions(t)
    nl = len(t.locations)
    code = cuda_gen.outcome_index_code(t, regs_of="q{t}[{k}]", mem_of="m[{k}]", indent="  ")
    n_in = len(regs) + nl
    src = tmp_path / "b.c"
    src.write_text("#include <stdio.h>\nint main(void) {\n"
                   + "".join(f"  unsigned int q{r}[4] = {{0}};\n" for r in range(len(t.threads)))
                   + f"  unsigned int m[{max(nl, 1)}] = {{0}};\n  unsigned int in[{n_in}];\n"
                   + "  while (scanf(\"%u\", &in[0]) == 1) {\n"
                   + "".join(f"    scanf(\"%u\", &in[{i}]);\n" for i in range(1, n_in))
                   + "".join(f"    q{r}[{k}] = in[{i}];\n" for i, (r, k) in enumerate(regs))
                   + "".join(f"    m[{k}] = in[{len(regs) + k}];\n" for k in range(nl))
                   + "    {\n" + code + "\n    printf(\"%u\\n\", b); }\n  }\n  return 0;\n}\n")
    exe = tmp_path / "b"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(src)], check=True)
    cases = [c.decode(b) for b in range(c.buckets)]
    cases.append(tuple([0] * (n_in - 1) + [c.base]))  # a value no store writes
    stdin = "\n".join(" ".join(str(v) for v in case) for case in cases if case is not None)
    got = [int(x) for x in subprocess.run([str(exe)], input=stdin, check=True,
                                          capture_output=True, text=True).stdout.split()]
    assert got == [*range(c.buckets), c.buckets]
