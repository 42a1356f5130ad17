"""``coherence bench engines``: every engine and the peer checkers side by side, in one run.

Issue 13's benchmark: on each row (a spec at a number of caches, symmetry off or exact) the
reference engine (optional: it is slow), the compiled engine on 1 thread and on all threads,
Rumur (on our Murphi export, verifier built with ``cc -O3``, on all threads) and Spin (on our
Promela export, pan built with ``-O3 -DNCORE=2``). Ratios come from one run on one machine,
never from timed tests.

How each cell is measured, so that the columns mean the same for every tool:

* Every (row, tool) cell runs in a child process of its own (a new session, killed as a
  group at the time limit), so peak RSS and a time-out belong to that cell alone. Peak RSS
  is ``wait4``'s figure for the child: the largest resident set of the cell's processes,
  Python included for our engines, the build (cc) or the verifier for Rumur and Spin.
* seconds: the search alone, without building (our engines: ``CheckResult.seconds``;
  Rumur and Spin: their verifier's wall clock). Builds are shown in their own column.
* ``--timeout`` bounds each search. Our engines' builds get ``BUILD_LIMIT_S`` first (the
  child says ``BUILT`` when done); Rumur and Spin are run by ``export/rumur.py`` and
  ``export/spin.py``, which bound each of their steps (translate, cc, verifier) by the same
  timeout, so a slow ``cc -O3`` shows as "timed out (gcc)".
* bytes/state: peak RSS over the states stored (the tool's own count: Spin's are its
  stored states), so every tool is charged for everything it holds; our engines' own
  figure for the state store alone is ``store_bytes_per_state`` in ``--json``.
* Rumur runs on ``--threads`` (all cores by default), like the compiled engine's
  "compiled-all"; Spin on ``SPIN_CORES`` (2) cores, as in the issue's figures.
* The coherence monitor is skipped in every row: the exports leave it out (docs/rumur.md),
  so every tool explores the same protocol. With symmetry off, Rumur's count equals ours;
  Spin stores ``READY + 1`` of its states per state of ours (plus one), converted in the
  "model states" figure; on a symmetric row Rumur runs its heuristic reduction (more
  states than our exact one) and Spin, which has none, is not run.
* speed-up over a peer: the peer's seconds over this tool's, both complete on the same row;
  a peer that timed out gives a lower bound (``>``); a search capped by a state limit is
  compared by model states per second (``~``).

A missing tool (rumur, spin, a C compiler) gives a "not run: <reason>" cell, never a crash.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from coherence.memory import usable_cpus

HELP = ("engines side by side: reference, compiled (1 and all threads), Rumur and Spin; "
        "states, seconds, states/s, peak RSS, bytes/state and speed-ups in one run")

SPECS_DIR = Path(__file__).resolve().parent.parent.parent / "specs"
TOOLS = ("reference", "compiled-1", "compiled-all", "rumur", "spin", "gpu")
DEFAULT_ROWS = ("german:4", "german:5", "german:6:sym", "broadcast_invalidate_acked:4",
                "mesi_directory:4")
# --engine gpu (issue 18): the GPU engine against the compiled engine on every core
GPU_ROWS = ("german:5", "german:6", "german:7:sym", "mesi_directory:5")
GPU_TOOLS = ("compiled-all", "gpu")
# --engine distributed (issue 21): the Ray engine's overhead against the compiled engine
# here (1 and 2 workers); a tool "distributed-N" runs N local workers (any N)
DIST_ROWS = ("german:3", "msi_directory:4")
DIST_TOOLS = ("compiled-1", "compiled-all", "distributed-1", "distributed-2")
SCALING_COMMAND = ("coherence bench engines --engine distributed --rows german:5 --tools "
                   "compiled-1,distributed-1,distributed-2,distributed-4,distributed-8")
SPIN_CORES = 2
BUILD_LIMIT_S = 900.0  # a build (cc -O3 of a big model) gets this long before the search's limit
RESULT_PREFIX = "CELL "
BUILT_LINE = "BUILT"


@attrs.frozen
class Row:
    """One row: a spec at a number of caches (or, for a hierarchical spec, at the sizes
    ``params`` give its index types' parameters), with exact symmetry or without."""

    spec: str  # a path
    agents: int | None
    symmetry: bool
    params: tuple[tuple[str, int], ...] = ()

    @property
    def size(self) -> str:
        return "/".join(f"{k}={v}" for k, v in self.params) if self.params else str(
            self.agents)

    @property
    def name(self) -> str:
        return f"{Path(self.spec).stem}:{self.size}{':sym' if self.symmetry else ''}"

    @property
    def title(self) -> str:
        size = " ".join(f"{k}={v}" for k, v in self.params) if self.params else (
            f"{self.agents} caches")
        return (f"{Path(self.spec).stem}, {size}, symmetry "
                f"{'exact' if self.symmetry else 'off'} (coherence monitor skipped)")

    def overrides(self) -> dict[str, int]:
        return dict(self.params) if self.params else {"agents": self.agents or 0}


ROW_FORMS = ("SPEC:AGENTS, SPEC:AGENTS:sym, or SPEC:NAME=V/NAME=V[:sym] for a hierarchical "
             "spec's parameters (e.g. german:5, german:6:sym, hmg:gpus=2/sms=1:sym)")


def parse_row(text: str) -> Row:
    """``SPEC:AGENTS[:sym]`` or ``SPEC:NAME=V/NAME=V[:sym]`` (a hierarchical spec is sized by
    its parameters, e.g. ``hmg:gpus=2/sms=1``); SPEC is a bundled spec's name (``german``)
    or a path. The spec is loaded at those sizes, so that a bad row is refused here."""
    parts = text.split(":")
    size = re.fullmatch(r"\d+|[A-Za-z_]\w*=\d+(/[A-Za-z_]\w*=\d+)*", parts[1]) if len(
        parts) > 1 else None
    if len(parts) not in (2, 3) or size is None or (
            len(parts) == 3 and parts[2] not in ("sym", "off")):
        raise ValueError(f"--rows: '{text}' is not {ROW_FORMS}")
    spec = Path(parts[0])
    if not spec.suffix:
        spec = SPECS_DIR / f"{parts[0]}.coh"
    if not spec.is_file():
        raise ValueError(f"--rows: no spec '{parts[0]}' (looked for {spec})")
    params = tuple((k, int(v)) for k, v in (p.split("=") for p in parts[1].split("/"))
                   ) if "=" in parts[1] else ()
    row = Row(str(spec), None if params else int(parts[1]), len(parts) == 3 and
              parts[2] == "sym", params)
    from coherence.errors import SpecError
    from coherence.spec.load import load_spec
    try:
        load_spec(row.spec, row.overrides())
    except SpecError as err:
        raise ValueError(f"--rows: '{text}': {err.message}") from None
    return row


# ---------------------------------------------------------------- availability


def unavailable(tool: str, row: Row) -> str | None:
    """Why ``tool`` cannot run on ``row`` here (None: it can)."""
    if tool.startswith("compiled"):
        from coherence.engines.compiled import CompiledEngine
        return CompiledEngine().available()
    if tool == "gpu":
        from coherence.engines.gpu import GpuEngine
        return GpuEngine().available()
    if tool.startswith("distributed-"):
        from coherence.engines.distributed import DistributedEngine
        workers = int(tool.split("-")[1])
        if workers > usable_cpus():
            return f"{workers} workers need {workers} cores; this machine has {usable_cpus()}"
        return DistributedEngine().available()
    if tool == "rumur":
        from coherence.export.rumur import rumur_available
        return None if rumur_available() else "rumur and cc are needed on the PATH"
    if tool == "spin":
        from coherence.export.spin import spin_available
        if row.symmetry:
            return "Spin has no symmetry reduction"
        return None if spin_available() else "spin and gcc are needed on the PATH"
    return None


# ---------------------------------------------------------------- one cell, in a child


def load_row(row: Row) -> Any:
    from coherence.spec.load import load_spec
    from coherence.spec.select import drop_properties

    model = load_spec(row.spec, row.overrides())
    return drop_properties(model, [p.name for p in model.properties if p.kind == "coherence"])


def cell_main(argv: Sequence[str]) -> int:
    """The child: measure one cell and print ``CELL {json}`` (``BUILT`` when the build is done,
    so that the parent starts the search's time limit only then)."""
    spec = json.loads(argv[0])
    row = Row(spec["spec"], spec["agents"], spec["symmetry"],
              tuple((k, v) for k, v in spec["params"]))
    tool: str = spec["tool"]
    try:
        doc = measure(row, tool, spec)
    except subprocess.TimeoutExpired as err:  # Rumur's or Spin's step ran past the timeout
        cmd = err.cmd[0] if isinstance(err.cmd, list) else str(err.cmd)
        doc = {"timeout": Path(str(cmd)).name}
    print(RESULT_PREFIX + json.dumps(doc), flush=True)
    return 0


def measure(row: Row, tool: str, spec: dict[str, Any]) -> dict[str, Any]:
    """One cell's figures (in the child process)."""
    timeout: float = spec["timeout"]
    model = load_row(row)
    if tool == "reference" or tool.startswith("compiled"):
        from coherence.engines import check
        from coherence.results import CheckOptions

        threads = 1 if tool in ("reference", "compiled-1") else spec["threads"]
        engine = "reference" if tool == "reference" else "compiled"
        build_s = 0.0
        if engine == "compiled":  # build now (cached by hash), so that the search runs alone
            from coherence.engines.cgen.codegen import generate
            from coherence.engines.compiled.build import build
            from coherence.layout import Layout

            t = time.perf_counter()
            build(generate(model, Layout(model)).source)
            build_s = time.perf_counter() - t
        print(BUILT_LINE, flush=True)
        result = check(model, CheckOptions(symmetry=row.symmetry, threads=threads,
                                           max_states=spec.get("max_states")), engine=engine)
        doc = {"states": result.states, "model_states": result.states,
               "seconds": result.seconds, "build_seconds": build_s, "verdict": result.verdict,
               "threads": result.threads, "symmetry": result.symmetry,
               "stopped": result.stopped, "store_bytes_per_state": result.bytes_per_state}
    elif tool == "gpu":
        from coherence.engines import check
        from coherence.engines.cgen.codegen import generate
        from coherence.engines.gpu import engine as gpu_engine
        from coherence.engines.gpu.device import CupyDevice
        from coherence.engines.gpu.source import kernel_source
        from coherence.layout import Layout
        from coherence.results import CheckOptions
        from coherence.semantics import Semantics

        t = time.perf_counter()  # NVRTC's compile, cached by CuPy for the search's own
        initial = len(list(Semantics(model).initial_states()))
        device = CupyDevice(kernel_source(generate(model, Layout(model)), initial, "nvrtc"))
        build_s = time.perf_counter() - t
        print(BUILT_LINE, flush=True)
        result = check(model, CheckOptions(symmetry=row.symmetry,
                                           max_states=spec.get("max_states")), engine="gpu")
        stats = gpu_engine.LAST_STATS
        doc = {"states": result.states, "model_states": result.states,
               "seconds": result.seconds, "build_seconds": build_s, "verdict": result.verdict,
               "threads": 1, "symmetry": result.symmetry, "stopped": result.stopped,
               "store_bytes_per_state": result.bytes_per_state, "device": device.name,
               "device_peak_bytes": stats.get("device_peak_bytes"),
               "device_bytes_per_state": (stats["device_peak_bytes"] / result.states
                                          if result.states else None)}
    elif tool.startswith("distributed-"):
        from coherence.engines import check
        from coherence.engines.cgen.codegen import generate
        from coherence.engines.distributed.native import build as build_worker
        from coherence.layout import Layout
        from coherence.results import CheckOptions

        t = time.perf_counter()
        build_worker(generate(model, Layout(model)).source)
        build_s = time.perf_counter() - t
        print(BUILT_LINE, flush=True)
        workers = int(tool.split("-")[1])
        t = time.perf_counter()
        result = check(model, CheckOptions(symmetry=row.symmetry,
                                           max_states=spec.get("max_states")),
                       engine="distributed", settings={"workers": workers})
        doc = {"states": result.states, "model_states": result.states,
               "seconds": result.seconds, "build_seconds": build_s, "verdict": result.verdict,
               "threads": workers, "symmetry": result.symmetry, "stopped": result.stopped,
               "store_bytes_per_state": result.bytes_per_state,
               "workers_peak_rss_bytes": result.peak_memory_bytes,
               # starting Ray and the workers, and stopping them: outside "seconds"
               "startup_seconds": time.perf_counter() - t - result.seconds}
    elif tool == "rumur":
        from coherence.export.murphi import to_murphi
        from coherence.export.rumur import run_rumur

        print(BUILT_LINE, flush=True)  # run_rumur bounds each of its steps by the timeout
        threads = spec["threads"]
        r = run_rumur(to_murphi(model), symmetry="heuristic" if row.symmetry else "off",
                      threads=threads, timeout=timeout, cflags=("-O3",))
        doc = {"states": r.states, "model_states": r.states, "seconds": r.seconds,
               "build_seconds": r.compile_seconds, "verdict": r.verdict, "threads": threads,
               "symmetry": "heuristic" if row.symmetry else "off", "stopped": None}
    elif tool == "spin":
        from coherence.export.promela import to_promela
        from coherence.export.spin import run_spin

        print(BUILT_LINE, flush=True)
        text = to_promela(model)
        ready = re.search(r"^#define READY (\d+)", text, re.M)
        per_state = int(ready.group(1)) + 1 if ready else 1
        s = run_spin(text, optimize=True, memory_mb=spec["spin_memory_mb"], timeout=timeout,
                     ncore=SPIN_CORES, cflags=("-O3",), pan_args=("-w26",))
        doc = {"states": s.states, "model_states": max(s.states - 1, 0) // per_state,
               "spin_states_per_state": per_state, "seconds": s.seconds,
               "build_seconds": s.compile_seconds, "verdict": s.verdict,
               "threads": SPIN_CORES, "symmetry": "off",
               "stopped": _spin_stop(s.output) if s.verdict == "incomplete" else None}
    else:
        raise SystemExit(f"unknown tool {tool}")
    return doc


def _spin_stop(output: str) -> str:
    """Why pan stopped short (its own words)."""
    for needle in ("out of memory", "max search depth too small", "Search not completed"):
        if needle.lower() in output.lower():
            return f"incomplete: {needle}"
    return "incomplete"


def run_cell(row: Row, tool: str, timeout: float, threads: int,
             max_states: int | None = None, spin_memory_mb: int = 8192) -> dict[str, Any]:
    """Measure one cell in a child process; a dict with ``status`` ok / timeout / not run /
    error and the figures."""
    base: dict[str, Any] = {"tool": tool, "row": row.name}
    reason = unavailable(tool, row)
    if reason is not None:
        return {**base, "status": "not run", "reason": reason}
    spec = {"spec": row.spec, "agents": row.agents, "params": row.params,
            "symmetry": row.symmetry, "tool": tool,
            "timeout": timeout, "threads": threads, "max_states": max_states,
            "spin_memory_mb": spin_memory_mb}
    # the child runs this module's cell_main; no spec text is ever evaluated
    cmd = [sys.executable, "-c",
           "import sys; from coherence.engines.bench import cell_main; "
           "sys.exit(cell_main(sys.argv[1:]))", json.dumps(spec)]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, bufsize=0,
                                start_new_session=True)
        lines, timed_out = _read_lines(proc, tool, timeout)
        if timed_out:
            _kill_group(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        _kill_group(proc.pid)  # stragglers (pan's worker processes) of a cell stopped early
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    peak = usage.ru_maxrss * 1024  # Linux: KiB
    stopped = {**base, "status": "timeout", "limit_s": timeout, "peak_rss_bytes": peak}
    if timed_out:
        return {**stopped, "reason": f"timed out after {timeout:g} s"}
    result = next((ln[len(RESULT_PREFIX):] for ln in lines if ln.startswith(RESULT_PREFIX)),
                  None)
    if result is None:
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        return {**base, "status": "error", "reason": f"exit {proc.returncode}: {tail[:300]}"}
    if result.startswith("{\"timeout\""):
        step = json.loads(result)["timeout"]
        return {**stopped, "reason": f"timed out after {timeout:g} s ({step})"}
    doc = json.loads(result)
    states = doc["states"]
    secs = doc["seconds"]
    doc.update(base)
    doc.update({"status": "ok", "peak_rss_bytes": peak,
                "states_per_second": states / secs if secs > 0 else None,
                "model_states_per_second": doc["model_states"] / secs if secs > 0 else None,
                "bytes_per_state": peak / states if states else None})
    if tool == "gpu":  # the states live on the device: charge its memory, not the host's
        doc["bytes_per_state"] = doc["device_bytes_per_state"]
    if tool.startswith("distributed-"):  # the workers are Ray's processes, not the cell's:
        peak = max(peak or 0, doc["workers_peak_rss_bytes"])  # their peaks, summed
        doc["peak_rss_bytes"] = peak
        doc["bytes_per_state"] = peak / states if states else None
    return doc


def _read_lines(proc: subprocess.Popen[bytes], tool: str,
                timeout: float) -> tuple[list[str], bool]:
    """The child's stdout lines, and whether it ran past its limit: ``BUILD_LIMIT_S`` until
    it says ``BUILT``, then ``timeout`` for the search (unbuffered reads, so that select
    sees every line)."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + BUILD_LIMIT_S
    pending = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return lines, True
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            return lines, False
        pending += chunk
        while b"\n" in pending:
            raw, pending = pending.split(b"\n", 1)
            line = raw.decode(errors="replace")
            lines.append(line)
            if line == BUILT_LINE:
                # Rumur and Spin bound each of their steps (translate, cc, verifier) by the
                # timeout themselves and report it; this deadline is only the backstop
                extra = 2 * timeout + 60 if tool in ("rumur", "spin") else 0.0
                deadline = time.monotonic() + timeout + extra


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


# ---------------------------------------------------------------- speed-ups and the table


def speedup(mine: dict[str, Any], peer: dict[str, Any]) -> str | None:
    """How many times faster ``mine`` is than ``peer`` on one row (see the module docstring)."""
    if mine.get("status") != "ok" or mine.get("stopped") or not mine.get("seconds"):
        return None
    if peer.get("status") == "timeout":
        return f">{peer['limit_s'] / mine['seconds']:.1f}x"
    if peer.get("status") != "ok" or not peer.get("seconds"):
        return None
    if peer.get("stopped"):
        if not peer.get("model_states_per_second") or not mine.get("model_states_per_second"):
            return None
        return f"~{mine['model_states_per_second'] / peer['model_states_per_second']:.1f}x"
    return f"{peer['seconds'] / mine['seconds']:.1f}x"


def scaling(cells: list[dict[str, Any]]) -> None:
    """Each distributed-N cell's states/s per worker and parallel efficiency: its rate over
    N times distributed-1's on the same row (both complete)."""
    one = next((c for c in cells if c["tool"] == "distributed-1" and c.get("status") == "ok"
                and not c.get("stopped") and c.get("seconds")), None)
    for c in cells:
        if not c["tool"].startswith("distributed-") or c.get("status") != "ok" or \
                c.get("stopped") or not c.get("seconds"):
            continue
        workers = int(c["tool"].split("-")[1])
        c["states_per_second_per_worker"] = c["states"] / c["seconds"] / workers
        if one is not None:
            c["parallel_efficiency"] = one["seconds"] / (workers * c["seconds"])


def bench(rows: Sequence[Row], tools: Sequence[str], timeout: float, threads: int,
          reference_max_states: int | None = None, spin_memory_mb: int = 8192,
          progress: Any = None) -> dict[str, Any]:
    out_rows = []
    for row in rows:
        cells = []
        for tool in tools:
            if progress is not None:
                progress(f"{row.name}: {tool} ...")
            cells.append(run_cell(row, tool, timeout, threads,
                                  reference_max_states if tool == "reference" else None,
                                  spin_memory_mb))
        for cell in cells:
            cell["speedup"] = {peer["tool"]: speedup(cell, peer) for peer in cells
                               if peer is not cell}
        scaling(cells)
        out_rows.append({"row": row.name, "spec": row.spec, "agents": row.agents,
                         "params": dict(row.params),
                         "symmetry": "exact" if row.symmetry else "off",
                         "title": row.title, "cells": cells})
    return {"tool": "coherence bench engines", "threads": threads, "timeout_s": timeout,
            "machine": {"cpus": usable_cpus(), "platform": sys.platform},
            "tools": list(tools), "rows": out_rows}


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return "-"  # pragma: no cover


def table(doc: dict[str, Any]) -> str:
    """The text table: one block per row, one line per tool."""
    tools = doc["tools"]
    head = (f"{'tool':<13} {'states':>12} {'seconds':>9} {'states/s':>11} {'peak RSS':>10} "
            f"{'B/state':>8} {'build s':>8}  " + " ".join(f"{'vs ' + t:>15}" for t in tools))
    out = []
    for row in doc["rows"]:
        out += ["", row["title"], head]
        notes: list[str] = []
        for c in row["cells"]:
            name = c["tool"]
            if c["status"] == "not run":
                out.append(f"{name:<13} not run: {c['reason']}")
                continue
            if c["status"] != "ok":
                out.append(f"{name:<13} {c['status']}: {c['reason']}")
                continue
            states = f"{c['states']:,}" + ("+" if c.get("stopped") else "")
            if c.get("stopped"):
                notes.append(f"{name}: stopped ({c['stopped']})")
            rate = c["states_per_second"]
            bps = c["bytes_per_state"]
            vs = " ".join(f"{(c['speedup'].get(t) or '-') if t != name else '':>15}"
                          for t in tools)
            out.append(f"{name:<13} {states:>12} {c['seconds']:>9.2f} "
                       f"{(f'{rate:,.0f}' if rate else '-'):>11} "
                       f"{_fmt_bytes(c['peak_rss_bytes']):>10} "
                       f"{(f'{bps:.0f}' if bps else '-'):>8} {c['build_seconds']:>8.1f}  {vs}")
            if "parallel_efficiency" in c:
                notes.append(f"{name}: {c['states_per_second_per_worker']:,.0f} states/s per "
                             f"worker, parallel efficiency {c['parallel_efficiency']:.0%}, "
                             f"Ray start-up {c['startup_seconds']:.1f} s (not in seconds)")
            if c["tool"] == "spin":
                out.append(f"{'':13} (Spin stores {c['spin_states_per_state']} states per "
                           f"state of ours: {c['model_states']:,} model states)")
        out += [f"{'':13} {n}" for n in notes]
    out.append("")
    out.append(f"threads: compiled-all and rumur {doc['threads']}, spin {SPIN_CORES} "
               f"(NCORE); seconds exclude builds; '+' a capped search; peak RSS per cell")
    if any(t.startswith("distributed-") for t in tools):
        out.append("distributed-N: N Ray workers on a local cluster; the scaling curve on a "
                   f"16-core machine: {SCALING_COMMAND}")
    if "gpu" in tools:
        out.append("gpu: B/state is the device's peak store (states, parents, hash table, "
                   "both tables while one doubles) over the states; build s is NVRTC's")
    return "\n".join(out)


# ---------------------------------------------------------------- the verb


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", default=None,
                   help=f"comma-separated SPEC:AGENTS[:sym], or SPEC:NAME=V/NAME=V[:sym] for a "
                        f"hierarchical spec (hmg:gpus=2/sms=1) (default: {','.join(DEFAULT_ROWS)})")
    p.add_argument("--tools", default=None,
                   help=f"comma-separated, from {', '.join(TOOLS)} (default: every one but "
                        "reference and gpu)")
    p.add_argument("--engine", choices=["gpu", "distributed"], default=None,
                   help=f"gpu: the GPU engine against compiled-all, on rows {','.join(GPU_ROWS)}; "
                        "distributed: the Ray engine on 1 and 2 workers against the compiled "
                        f"engine, on rows {','.join(DIST_ROWS)} (tools distributed-N: N "
                        "workers); unless --rows or --tools say otherwise")
    p.add_argument("--include-reference", action="store_true",
                   help="also run the reference engine (slow: hours on the default rows)")
    p.add_argument("--reference-max-states", type=int, default=None, metavar="N",
                   help="run the reference engine capped at N states per row (compared by "
                        "states/s); implies --include-reference")
    p.add_argument("--timeout", type=float, default=300.0, metavar="S",
                   help="seconds per tool per row, builds excluded (default: %(default)s)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for compiled-all and Rumur (default: all cores)")
    p.add_argument("--spin-memory", type=int, default=8192, metavar="MB",
                   help="Spin's MEMLIM (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    from coherence.progress import add_progress_args
    add_progress_args(p)


def run(args: argparse.Namespace) -> int:
    gpu = getattr(args, "engine", None) == "gpu"
    dist = getattr(args, "engine", None) == "distributed"
    default_tools = GPU_TOOLS if gpu else DIST_TOOLS if dist else [
        t for t in TOOLS if t not in ("reference", "gpu")]
    default_rows = GPU_ROWS if gpu else DIST_ROWS if dist else DEFAULT_ROWS
    try:
        rows = [parse_row(r.strip())
                for r in (args.rows or ",".join(default_rows)).split(",")
                if r.strip()]
        tools = [t.strip() for t in (args.tools or ",".join(default_tools)).split(",")
                 if t.strip()]
        if gpu and "gpu" not in tools:
            tools.append("gpu")
        for t in tools:
            if t not in TOOLS and not re.fullmatch(r"distributed-[1-9]\d*", t):
                raise ValueError(f"--tools: unknown tool '{t}' (choose from {', '.join(TOOLS)}, "
                                 "distributed-N)")
    except ValueError as err:
        print(f"coherence bench engines: error: {err}", file=sys.stderr)
        return 2
    if (args.include_reference or args.reference_max_states) and "reference" not in tools:
        tools.insert(0, "reference")
    if not rows or not tools:
        print("coherence bench engines: error: no rows or no tools", file=sys.stderr)
        return 2
    threads = args.threads or usable_cpus()
    from coherence.progress import reporter
    cells = len(rows) * len(tools)
    with reporter(args, "coherence bench engines") as rep:
        rep.header(None, {}, ",".join(tools),
                   {"timeout_per_cell": args.timeout,
                    "reference_max_states": args.reference_max_states},
                   rows=[r.name for r in rows], threads=threads)
        started = [0]

        def say(msg: str) -> None:  # one call as each cell (row x tool) starts
            started[0] += 1
            rep.update(f"cell {started[0]} of {cells}: {msg}", done=started[0] - 1,
                       total=cells, force=True)

        doc = bench(rows, tools, args.timeout, threads, args.reference_max_states,
                    args.spin_memory, progress=say)
        rep.update(f"{cells} cells measured", done=cells, total=cells)
        rep.finish("measured", 0, cells=cells)
    if args.json:  # the CLI's JSON format (indented), without importing the CLI from here
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(table(doc))
    return 0

