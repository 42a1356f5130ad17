"""``coherence hw run|report|bench``: litmus tests on real GPUs (extra ``[gpu]``), the report
that holds them against the protocol models, and the seed's bandwidth/latency figures."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from coherence.cli import EXIT_BAD_INPUT, EXIT_FAILS, EXIT_HOLDS, emit_json
from coherence.progress import add_progress_args

HELP = "run litmus tests on GPUs (CuPy), report them against models, benchmark the memory"

DEFAULT_MODELS = ["specs/broadcast_invalidate.coh", "specs/broadcast_invalidate_acked.coh",
                  "specs/gpu_write_through.coh"]


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.litmus import add_core_arg
    from coherence.commands.options import (
        any_int,
        output_dir,
        output_file,
        positive_int,
        positive_seconds,
    )
    sub = p.add_subparsers(dest="hw_verb", metavar="ACTION", parser_class=type(p))
    sub.required = True
    r = sub.add_parser("run", help="run litmus tests and variants on this machine's GPU(s) "
                       "and CPU", description="run litmus tests and variants on this machine's "
                       "GPU(s) (the persistent harness, for a time budget per environment) or, "
                       "with --place, on CPU threads and GPUs across a link")
    r.add_argument("tests", nargs="*", default=["all"], metavar="TEST",
                   help="litmus files or catalogue names (default: all)")
    r.add_argument("--variant", "-V", action="append", default=[], metavar="NAME",
                   help="run only this variant of each test (repeatable; default: all)")
    r.add_argument("--env", action="append", default=[], metavar="NAME",
                   help="testing environment (repeatable; default: plain, barrier, scatter, "
                        "stress; see docs/hardware.md)")
    r.add_argument("--seconds", type=positive_seconds, default=1.0,
                   help="time budget of each variant in each environment or placement "
                        "(default: 1)")
    r.add_argument("--place", action="append", default=[], metavar="PLAN",
                   help="run roles across a link instead: 'cpu-gpu' (each role alone on a CPU "
                        "thread against GPU 0, on pinned and on managed memory), 'peer' (roles "
                        "on different GPUs over peer memory), or AGENT+AGENT...@MEMORY, e.g. "
                        "cpu+gpu0@pinned (agents cpu, gpuN; memory host, pinned, managed, gpuN)"
                        "; repeatable")
    r.add_argument("--instances", type=positive_int, default=4,
                   help="with --place: instances run at once (each CPU role is one host "
                        "thread; default: 4)")
    r.add_argument("--seed", type=any_int, default=1,
                   help="seed of the harness's random choices (default: 1)")
    r.add_argument("--out", type=output_file, metavar="FILE",
                   help="results JSON (default: results/hw-DATE.json)")
    r.add_argument("--keep-build", type=output_dir, metavar="DIR",
                   help="keep each variant's CUDA source, cubin and SASS under DIR")
    r.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    add_progress_args(r)
    r.set_defaults(run=run_hw)
    rep = sub.add_parser("report", help="render saved results: table (Markdown) and PNG",
                         description="render saved results: table (Markdown) and PNG")
    rep.add_argument("results", nargs="+", metavar="RESULTS.json",
                     help="results files written by `coherence hw run`")
    rep.add_argument("--model", action="append", default=[], metavar="SPEC",
                     help="protocol model to compare with (repeatable; default: the three "
                          "bundled GPU models)")
    add_core_arg(rep)  # as `litmus --core`; the H200 report used --core pipelined
    rep.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                     help="override a parameter of every model (repeatable; agents, lines and "
                          "values are set per test, as in litmus)")
    rep.add_argument("--reference", default="gpu_write_through", metavar="MODEL",
                     help="the model (by file stem, one of --model) that decides which variants "
                          "allow their condition, for each environment's mutation score "
                          "(default: gpu_write_through)")
    rep.add_argument("--out-dir", type=output_dir, metavar="DIR",
                     help="write report.md and report.png here")
    rep.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    rep.set_defaults(run=report)
    b = sub.add_parser("bench", help="copy bandwidth and latencies beside the seed's claims",
                       description="copy bandwidth and latencies beside the seed's claims")
    b.add_argument("--repeats", type=positive_int, default=5,
                   help="timed launches of each measurement; the median is kept (default: 5)")
    b.add_argument("--quick", action="store_true", help="smaller sizes (for tests)")
    b.add_argument("--out", type=output_file, metavar="FILE",
                   help="results JSON (default: results/bench-DATE.json)")
    b.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    add_progress_args(b)
    b.set_defaults(run=bench)
    pl = sub.add_parser("poll", help="can a poll miss another SM's store? plain, volatile and "
                        "relaxed polls with a poll budget (issue 16)",
                        description="can a poll miss another SM's store? plain, volatile and "
                        "relaxed polls with a poll budget (issue 16)")
    pl.add_argument("--launches", type=positive_int, default=10,
                    help="launches per load kind (default: 10)")
    pl.add_argument("--budget", type=positive_int, default=1 << 20,
                    help="loads a poll may issue before it gives up (default: 1048576)")
    pl.add_argument("--out", type=output_file, metavar="FILE",
                    help="results JSON (default: results/poll-DATE.json)")
    pl.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    pl.set_defaults(run=poll)


def run(args: argparse.Namespace) -> int:  # replaced by the action's function
    raise SystemExit(EXIT_BAD_INPUT)


def _need_cupy() -> None:
    from coherence.errors import NO_SPAN, SpecError
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # ImportError, or CUDA with no device/driver
        raise SpecError(f"coherence hw needs CuPy and an NVIDIA GPU ({type(e).__name__}: {e}); "
                        "install with: pip install 'coherence[gpu]'", NO_SPAN) from None


def _write(path: str | None, default: str, doc: dict[str, Any]) -> str:
    out = Path(path or default)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    return str(out)


def _plans(args: argparse.Namespace, tests: list[Any]) -> list[str]:
    """Validate --place before touching a GPU; returns the words of the plans."""
    from coherence.errors import NO_SPAN, SpecError
    from coherence.hw.placement import parse_placement

    for plan in args.place:
        if plan in ("cpu-gpu", "peer"):
            continue
        p = parse_placement(plan)
        for t in tests:
            if len(p.agents) != len(t.threads):
                raise SpecError(f"placement {plan!r} has {len(p.agents)} agents; {t.name} has "
                                f"{len(t.threads)} roles", NO_SPAN)
    return list(args.place)


def _needs_gpu(plans: list[str]) -> bool:
    from coherence.hw.placement import parse_placement

    if not plans:
        return True
    for plan in plans:
        if plan in ("cpu-gpu", "peer"):
            return True
        p = parse_placement(plan)
        if p.gpus or p.memory != "host":
            return True
    return False


def _peer_matrix() -> list[list[bool]]:
    import cupy as cp

    n = cp.cuda.runtime.getDeviceCount()
    return [[i == j or bool(cp.cuda.runtime.deviceCanAccessPeer(i, j)) for j in range(n)]
            for i in range(n)]


def _enable_peers(plans: list[Any]) -> None:
    import contextlib

    plans = [p for p in plans if len(p.gpus) > 1]
    if not plans:
        return
    import cupy as cp

    for p in plans:
        for g in p.gpus:
            for h in p.gpus:
                if g != h:
                    with cp.cuda.Device(g), contextlib.suppress(
                            cp.cuda.runtime.CUDARuntimeError):
                        cp.cuda.runtime.deviceEnablePeerAccess(h)  # fails if already on


def run_hw(args: argparse.Namespace) -> int:
    from coherence.hw.environments import DEFAULT_ENVIRONMENTS, environment
    from coherence.litmus.catalogue import load_catalogue
    from coherence.litmus.variants import apply_variant

    tests = load_catalogue(args.tests)
    for t in tests:  # validate variants before touching the GPU
        for v in args.variant:
            apply_variant(t, v)
    envs = [environment(e) for e in (args.env or DEFAULT_ENVIRONMENTS)]
    plans = _plans(args, tests)
    if _needs_gpu(plans):
        _need_cupy()
    if plans:
        return _run_link(args, tests, plans)
    return _run_gpu(args, tests, envs)


def _jobs(args: argparse.Namespace, tests: list[Any]) -> list[Any]:
    from coherence.litmus.variants import apply_variant, variant_names

    return [apply_variant(t, v) for t in tests for v in (args.variant or variant_names(t))]


def _say(rep: Any, args: argparse.Namespace, line: str) -> None:
    from coherence.commands.common import err_console

    if rep.enabled:  # above the live line, or a note record
        rep.note(line)
    elif not args.json:
        err_console().print(line, markup=False)


def _finish(args: argparse.Namespace, default: str, doc: dict[str, Any]) -> int:
    path = _write(args.out, default, doc)
    if args.json:
        emit_json({"results_file": path, **doc})
    else:
        print(f"wrote {path}")
    return EXIT_HOLDS


def _sass_word(s: dict[str, Any]) -> str:
    return "ok" if s.get("ok") else str(s.get("why", "MISMATCH"))


def _run_gpu(args: argparse.Namespace, tests: list[Any], envs: list[Any]) -> int:
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    import attrs

    from coherence.commands.common import reporter
    from coherence.hw.harness import (
        RunOptions,
        compile_variant,
        get_kernel,
        provenance,
        run_environment,
    )

    options = RunOptions(seconds=args.seconds, seed=args.seed)
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    jobs = _jobs(args, tests)
    build_root = Path(args.keep_build or tempfile.mkdtemp(prefix="coherence-hw-"))
    total = len(jobs) * len(envs)
    with reporter(args, "coherence hw run") as rep:
        rep.header(None, {}, f"cuda ({options.arch})",
                   {"seconds": args.seconds, "environments": len(envs)},
                   variants=len(jobs), seed=args.seed)
        rep.update(f"compiling {len(jobs)} variants (nvcc)", done=0, total=total, force=True)
        with ThreadPoolExecutor(max_workers=8) as pool:  # nvcc runs are independent processes
            builds = list(pool.map(
                lambda iv: compile_variant(
                    iv[1], options.arch, build_root / f"{iv[0]:03d}-{iv[1].name}-{iv[1].variant}"),
                enumerate(jobs)))
        prov = provenance(attrs.asdict(options))
        default = time.strftime("results/hw-%Y%m%d-%H%M%S.json")
        head = {"schema": 2, "tool": "coherence hw run", "provenance": prov,
                "environments": {e.name: e.to_json() for e in envs}}
        done = 0
        for n, (vt, built) in enumerate(zip(jobs, builds, strict=True)):
            kernel = get_kernel(built)
            for env in envs:
                what = f"variant {n + 1} of {len(jobs)}: {vt.name} {vt.variant} [{env.name}]"
                rep.update(what, done=done, total=total, force=True)

                def ticked(t: float, budget: float, what: str = what, done: int = done) -> None:
                    rep.update(f"{what}, {t:.1f} of {budget:g} s", done=done, total=total)
                res = run_environment(vt, kernel, env, options, built[1], progress=ticked)
                results.append(res.to_json())
                done += 1
                # written after every run: a run cut short still leaves its results
                _write(args.out, default, {**head, "complete": False, "results": results})
                _say(rep, args, f"{vt.name} {vt.variant} [{env.name}]: {res.instances:,} "
                                f"instances ({res.instances_per_s:.3g}/s), "
                                f"{len(res.distinct_sm)} outcomes, {res.timeouts} timeouts, "
                                f"SASS {_sass_word(res.sass)}, {res.seconds:.1f} s")
        rep.update(f"{total} runs", done=total, total=total)
        rep.finish("ran", EXIT_HOLDS, variants=len(jobs))
    return _finish(args, default, {**head, "complete": True,
                                   "seconds": round(time.perf_counter() - started, 2),
                                   "results": results})


def _run_link(args: argparse.Namespace, tests: list[Any], plans: list[str]) -> int:
    from coherence.commands.common import reporter
    from coherence.hw.link import LinkOptions, run_link, unrunnable
    from coherence.hw.placement import check, cpu_gpu_plans, parse_placement, peer_plans

    options = LinkOptions(seconds=args.seconds, instances=args.instances, seed=args.seed)
    gpu = _needs_gpu(plans)
    peer = _peer_matrix() if gpu else []
    not_run: list[dict[str, str]] = []
    runs = []
    for vt in _jobs(args, tests):
        for plan in plans:
            if plan == "cpu-gpu":
                for p in cpu_gpu_plans(len(vt.threads)):
                    why = unrunnable(p)
                    if why is None:
                        runs.append((vt, p))
                    elif {"place": p.label(), "why": why} not in not_run:
                        not_run.append({"place": p.label(), "why": why})
            elif plan == "peer":
                ps, why = peer_plans(len(vt.threads), peer)
                if why and {"place": plan, "why": why} not in not_run:
                    not_run.append({"place": plan, "why": why})
                runs += [(vt, p) for p in ps]
            else:
                p = parse_placement(plan)
                check(p, len(peer), peer)
                why = unrunnable(p) if gpu else None
                if why is None:
                    runs.append((vt, p))
                elif {"place": plan, "why": why} not in not_run:
                    not_run.append({"place": plan, "why": why})
    if gpu:
        _enable_peers([p for _, p in runs])
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    default = time.strftime("results/hw-link-%Y%m%d-%H%M%S.json")
    prov: dict[str, Any] = {"options": {"seconds": options.seconds,
                                        "instances": options.instances, "seed": options.seed}}
    if gpu:
        from coherence.hw.harness import provenance
        prov = provenance(prov["options"])
    head = {"schema": 2, "tool": "coherence hw run", "provenance": prov, "results": [],
            "not_run": not_run}
    with reporter(args, "coherence hw run") as rep:
        rep.header(None, {}, "link", {"seconds": args.seconds, "instances": args.instances},
                   runs=len(runs), seed=args.seed)
        for skipped in not_run:
            _say(rep, args, f"--place {skipped['place']}: {skipped['why']}")
        for n, (vt, p) in enumerate(runs):
            what = f"run {n + 1} of {len(runs)}: {vt.name} {vt.variant} [{p.label()}]"
            rep.update(what, done=n, total=len(runs), force=True)
            res = run_link(vt, p, options)
            results.append(res.to_json())
            _write(args.out, default, {**head, "complete": False, "link_results": results})
            _say(rep, args, f"{vt.name} {vt.variant} [{p.label()}]: {res.instances:,} "
                            f"instances ({res.instances_per_s:.3g}/s), "
                            f"{len(res.distinct_sm)} outcomes, {res.timeouts} timeouts, "
                            f"{res.seconds:.1f} s")
        rep.finish("ran", EXIT_HOLDS, runs=len(runs))
    return _finish(args, default, {**head, "complete": True,
                                   "seconds": round(time.perf_counter() - started, 2),
                                   "link_results": results})


def report(args: argparse.Namespace) -> int:
    from coherence.commands.common import out_console
    from coherence.commands.litmus import litmus_params
    from coherence.hw.report import (
        environment_scores,
        load_results,
        markdown,
        plot,
        rows,
        scores_markdown,
    )

    docs = [load_results(p) for p in args.results]
    specs = args.model or DEFAULT_MODELS
    table = rows(docs, specs, args.core, litmus_params(args.param))
    scores = environment_scores(table, args.reference)
    md = markdown(table, docs[0].get("provenance"), args.core) + scores_markdown(scores)
    written = []
    if args.out_dir:
        d = Path(args.out_dir)
        d.mkdir(parents=True, exist_ok=True)
        (d / "report.md").write_text(md)
        written.append(str(d / "report.md"))
        prov = docs[0].get("provenance", {})
        plot(table, d / "report.png", f"litmus condition rate on {prov.get('gpu', 'GPU')} "
                                      f"(instances with roles on distinct SMs)")
        written.append(str(d / "report.png"))
    refuted = sorted({m for r in table for m, v in r["models"].items() if not v["consistent"]})
    if args.json:
        emit_json({"schema": 2, "tool": "coherence hw report", "rows": table,
                   "mutation": scores, "refuted_models": refuted, "written": written})
    else:
        out_console().print(md, markup=False)
        for w in written:
            print(f"wrote {w}")
    return EXIT_FAILS if refuted and len(refuted) == len(specs) else EXIT_HOLDS


def bench(args: argparse.Namespace) -> int:
    _need_cupy()
    from coherence.commands.common import reporter
    from coherence.hw.bench import bench as run_bench
    from coherence.hw.harness import provenance

    with reporter(args, "coherence hw bench") as rep:
        rep.header(None, {}, "cupy", {"repeats": args.repeats}, quick=args.quick)
        doc = {"schema": 1, "tool": "coherence hw bench",
               "provenance": provenance({"repeats": args.repeats}),
               **run_bench(args.repeats, args.quick, progress=lambda done, total, what:
                           rep.update(f"measurement {done + 1} of {total}: {what}", done=done,
                                      total=total, force=True))}
        rep.finish("measured", EXIT_HOLDS, figures=len(doc["figures"]))
    path = _write(args.out, time.strftime("results/bench-%Y%m%d-%H%M%S.json"), doc)
    if args.json:
        emit_json({"results_file": path, **doc})
        return EXIT_HOLDS
    for k, v in doc["figures"].items():
        if v["value"] is None:
            print(f"{k:24} {v['how']}")
        else:
            print(f"{k:24} {v['value']} {v['unit']}   ({v['how']})")
    for n in doc["notes"]:
        print(f"note: {n}")
    print(f"wrote {path}")
    return EXIT_HOLDS


def poll(args: argparse.Namespace) -> int:
    _need_cupy()
    from coherence.hw.harness import provenance
    from coherence.hw.poll import LOADS, run_poll

    rows = [run_poll(kind, args.launches, args.budget).to_json() for kind in LOADS]
    prov = provenance({"launches": args.launches, "budget": args.budget})
    doc = {"schema": 1, "tool": "coherence hw poll", "provenance": prov, "results": rows}
    path = _write(args.out, time.strftime("results/poll-%Y%m%d-%H%M%S.json"), doc)
    if args.json:
        emit_json({"results_file": path, **doc})
        return EXIT_HOLDS
    for r in rows:
        print(f"{r['kind']:9} {r['ptx']:28} seen {r['seen']:,}, spun out {r['spun_out']:,} "
              f"({r['spun_out_distinct_sm']:,} across SMs) of {r['pairs'] * r['launches']:,} "
              f"polls; median {r['median_iterations']} loads, max {r['max_iterations']}")
    print(f"wrote {path}")
    return EXIT_HOLDS
