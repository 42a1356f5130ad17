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
        nonnegative_int,
        output_dir,
        output_file,
        positive_int,
    )
    sub = p.add_subparsers(dest="hw_verb", metavar="ACTION", parser_class=type(p))
    sub.required = True
    r = sub.add_parser("run", help="run litmus tests and variants on this machine's GPU",
                       description="run litmus tests and variants on this machine's GPU")
    r.add_argument("tests", nargs="*", default=["all"], metavar="TEST",
                   help="litmus files or catalogue names (default: all)")
    r.add_argument("--variant", "-V", action="append", default=[], metavar="NAME",
                   help="run only this variant of each test (repeatable; default: all)")
    r.add_argument("--launches", type=positive_int, default=20, help="launches per variant")
    r.add_argument("--stress-iters", type=nonnegative_int, default=64,
                   help="memory-stress iterations of the idle threads per instance "
                        "(default: 64)")
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


def run_hw(args: argparse.Namespace) -> int:
    from coherence.commands.common import err_console, reporter
    from coherence.litmus.catalogue import load_catalogue
    from coherence.litmus.variants import apply_variant, variant_names

    tests = load_catalogue(args.tests)
    for t in tests:  # validate variants before touching the GPU
        for v in args.variant:
            apply_variant(t, v)
    _need_cupy()
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    from coherence.hw.harness import HwOptions, compile_variant, provenance, run_variant

    options = HwOptions(launches=args.launches, stress_iters=args.stress_iters, seed=args.seed)
    results = []
    err = err_console()
    started = time.perf_counter()
    jobs = [apply_variant(t, v) for t in tests for v in (args.variant or variant_names(t))]
    build_root = Path(args.keep_build or tempfile.mkdtemp(prefix="coherence-hw-"))
    with reporter(args, "coherence hw run") as rep:
        rep.header(None, {}, f"cuda ({options.arch})",
                   {"launches": args.launches, "stress_iters": args.stress_iters},
                   variants=len(jobs), seed=args.seed)
        rep.update(f"compiling {len(jobs)} variants (nvcc)", done=0, total=len(jobs),
                   force=True)
        with ThreadPoolExecutor(max_workers=8) as pool:  # nvcc runs are independent processes
            builds = list(pool.map(
                lambda iv: compile_variant(
                    iv[1], options.arch, build_root / f"{iv[0]:03d}-{iv[1].name}-{iv[1].variant}"),
                enumerate(jobs)))
        prov = provenance(options)
        default = time.strftime("results/hw-%Y%m%d-%H%M%S.json")
        for n, (vt, built) in enumerate(zip(jobs, builds, strict=True)):
            what = f"variant {n + 1} of {len(jobs)}: {vt.name} {vt.variant}"
            rep.update(what, done=n, total=len(jobs), force=True)

            def launched(k: int, launches: int, what: str = what, n: int = n) -> None:
                rep.update(f"{what}, launch {k} of {launches}", done=n, total=len(jobs),
                           launch=k)
            res = run_variant(vt, options, progress=launched, built=built)
            results.append(res.to_json())
            # written after every variant: a run cut short still leaves its results
            _write(args.out, default, {"schema": 1, "tool": "coherence hw run",
                                       "provenance": prov, "complete": False,
                                       "results": results})
            line = (f"{vt.name} {vt.variant}: {res.instances:,} instances, "
                    f"{len(res.distinct_sm)} outcomes, {res.timeouts} timeouts, SASS "
                    f"{'ok' if res.sass.get('ok') else res.sass.get('why', 'MISMATCH')}, "
                    f"{res.seconds:.1f} s")
            if rep.enabled:  # above the live line, or a note record
                rep.note(line)
            elif not args.json:
                err.print(line, markup=False)
        rep.update(f"{len(jobs)} variants run", done=len(jobs), total=len(jobs))
        rep.finish("ran", EXIT_HOLDS, variants=len(jobs))
    doc = {"schema": 1, "tool": "coherence hw run", "provenance": prov, "complete": True,
           "seconds": round(time.perf_counter() - started, 2), "results": results}
    path = _write(args.out, default, doc)
    if args.json:
        emit_json({"results_file": path, **doc})
    else:
        print(f"wrote {path}")
    return EXIT_HOLDS


def report(args: argparse.Namespace) -> int:
    from coherence.commands.common import out_console
    from coherence.commands.litmus import litmus_params
    from coherence.hw.report import load_results, markdown, plot, rows

    docs = [load_results(p) for p in args.results]
    specs = args.model or DEFAULT_MODELS
    table = rows(docs, specs, args.core, litmus_params(args.param))
    md = markdown(table, docs[0].get("provenance"), args.core)
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
        emit_json({"schema": 1, "tool": "coherence hw report", "rows": table,
                   "refuted_models": refuted, "written": written})
    else:
        out_console().print(md, markup=False)
        for w in written:
            print(f"wrote {w}")
    return EXIT_FAILS if refuted and len(refuted) == len(specs) else EXIT_HOLDS


def bench(args: argparse.Namespace) -> int:
    _need_cupy()
    from coherence.commands.common import reporter
    from coherence.hw.bench import bench as run_bench
    from coherence.hw.harness import HwOptions, provenance

    with reporter(args, "coherence hw bench") as rep:
        rep.header(None, {}, "cupy", {"repeats": args.repeats}, quick=args.quick)
        doc = {"schema": 1, "tool": "coherence hw bench", "provenance": provenance(HwOptions()),
               **run_bench(args.repeats, args.quick, progress=lambda done, total, what:
                           rep.update(f"measurement {done + 1} of {total}: {what}", done=done,
                                      total=total, force=True))}
        rep.finish("measured", EXIT_HOLDS, figures=len(doc["figures"]))
    path = _write(args.out, time.strftime("results/bench-%Y%m%d-%H%M%S.json"), doc)
    if args.json:
        emit_json({"results_file": path, **doc})
        return EXIT_HOLDS
    for k, v in doc["figures"].items():
        print(f"{k:24} {v['value']} {v['unit']}   ({v['how']})")
    for n in doc["notes"]:
        print(f"note: {n}")
    print(f"wrote {path}")
    return EXIT_HOLDS


def poll(args: argparse.Namespace) -> int:
    _need_cupy()
    from coherence.hw.harness import HwOptions, provenance
    from coherence.hw.poll import LOADS, run_poll

    rows = [run_poll(kind, args.launches, args.budget).to_json() for kind in LOADS]
    doc = {"schema": 1, "tool": "coherence hw poll", "provenance": provenance(HwOptions()),
           "results": rows}
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
