"""Progress of long runs on stderr: one facility for every verb (check, prove, fuzz, litmus,
diagram, bench, hw), so that a run says what it is doing however it is watched.

Modes (``--progress``):

- ``auto`` (default): a live line on a terminal, nothing otherwise;
- ``always``: a live line on a terminal, periodic plain lines otherwise (CI logs);
- ``plain``: periodic plain lines, terminal or not;
- ``jsonl``: one JSON object per line (as TLC's ``-tool`` mode), for tools;
- ``never``: nothing.

Whatever the mode, the run's header (spec, parameters, engine, bounds) comes first. The live
line is cut to the terminal's width (it never wraps) and refreshes its clock and memory figure
while an engine is busy; plain and JSON lines are written every ``--progress-every`` seconds
even when the engine says nothing (a heartbeat), and once more at the end. Every line carries
the process's resident memory and, where the verb knows how much work is left (BMC depth k of
K, fuzz run i of N, litmus test i of n, bench case i of n), an estimate of the time left.

JSON-lines records (``schema`` 1; ``coherence/schemas/progress.json``), one per line on stderr
(stdout stays free for ``--json``'s document):

- ``{"type": "header", "schema": 1, "tool", "spec", "params", "engine", "bounds", "started",
  ...}`` -- first;
- ``{"type": "progress", "tool", "elapsed", "rss_bytes", "message", "done", "total",
  "eta_seconds", ...}`` -- ``done``/``total``/``eta_seconds`` are null where unknown; the
  verb's own figures (``states``, ``depth``, ``runs`` ...) are further keys;
- ``{"type": "note", "tool", "message"}`` -- e.g. a default bound that was applied;
- ``{"type": "summary", "tool", "verdict", "exit_code", "elapsed", "peak_rss_bytes", ...}``
  -- last; ``verdict`` is ``error`` (exit 2) or ``interrupted`` when the run did not finish.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import IO, Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from coherence.memory import peak_rss_bytes, rss_bytes
from coherence.results import Progress

MODES = ("auto", "always", "never", "plain", "jsonl")
RECORD_SCHEMA = 1
# seconds between lines (plain, jsonl) or redraws (live) unless --progress-every says otherwise
DEFAULT_EVERY = {"live": 0.25, "plain": 10.0, "jsonl": 1.0, "off": 1.0}
ENGINE_EVERY = 0.5  # how often engines are asked to report at most (CheckOptions.progress_every)

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def resolve_mode(mode: str, is_terminal: bool) -> str:
    """What ``--progress MODE`` means here: ``live``, ``plain``, ``jsonl`` or ``off``."""
    if mode == "auto":
        return "live" if is_terminal else "off"
    if mode == "always":
        return "live" if is_terminal else "plain"
    if mode == "never":
        return "off"
    if mode in ("plain", "jsonl"):
        return mode
    raise ValueError(f"unknown progress mode {mode!r} (choose from {', '.join(MODES)})")


def fit(text: str, width: int) -> str:
    """``text`` on one line of at most ``width - 1`` columns (the last column is left free: a
    terminal that fills it wraps to the next line)."""
    text = _CONTROL.sub(" ", text)
    room = max(1, width - 1)
    return text if len(text) <= room else text[: room - 1] + "…"


def duration(seconds: float) -> str:
    """``7s``, ``3m05s``, ``2h04m``: short, fixed order, no wrapping surprises."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB"


def eta_seconds(elapsed: float, done: int | None, total: int | None) -> float | None:
    """The time left if the rest goes as fast as what is done (a linear estimate)."""
    if done is None or total is None or done <= 0 or total <= 0:
        return None
    return max(0.0, elapsed / done * (total - done)) if done < total else 0.0


def _value_text(name: str, value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, int) and not isinstance(value, bool):
        return mib(value) if name.endswith("memory_limit") else f"{value:,}"
    return str(value)


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Reporter:
    """Where one run's progress goes. Verbs call ``header`` once, ``update`` as work goes on
    (cheap: it only records, except when a line is due), ``note`` for remarks, and ``finish``
    with the verdict; leaving the ``with`` block writes the summary."""

    def __init__(self, tool: str, mode: str = "never", every: float | None = None,
                 console: Console | None = None, stream: IO[str] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.console = console if console is not None else Console(stderr=True,
                                                                   highlight=False)
        self.kind = resolve_mode(mode, self.console.is_terminal)
        self.every = DEFAULT_EVERY[self.kind] if every is None else every
        self.tool = tool
        self._stream = stream
        self._clock = clock
        self.start = clock()
        self._lock = threading.RLock()
        self._message = "starting"
        self._fields: dict[str, Any] = {}
        self._done: int | None = None
        self._total: int | None = None
        self._eta: float | None = None  # the verb's own estimate: when (clock) it will end
        self._pending = False  # the latest status has not been written yet
        self._last_line = self.start
        self._summary: dict[str, Any] | None = None
        self._header_written = False
        self._peak_rss = 0  # the most resident memory seen in a status
        self._live: Live | None = None
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def enabled(self) -> bool:
        return self.kind != "off"

    @property
    def engine_every(self) -> float:
        """How often an engine should call back (``CheckOptions.progress_every``)."""
        return min(ENGINE_EVERY, self.every)

    @property
    def stream(self) -> IO[str]:
        return self._stream if self._stream is not None else sys.stderr

    # -- what verbs call ------------------------------------------------------------------

    def header(self, spec: str | None, params: Mapping[str, int] | None = None,
               engine: str | None = None, bounds: Mapping[str, Any] | None = None,
               **extra: Any) -> None:
        """The run's identity, written before any work: spec, parameters, engine, bounds
        (``None`` values in ``bounds`` mean unbounded)."""
        record = {"type": "header", "schema": RECORD_SCHEMA, "tool": self.tool, "spec": spec,
                  "params": dict(params or {}), "engine": engine,
                  "bounds": dict(bounds or {}), **extra, "started": _iso_now()}
        with self._lock:
            self._header_written = True
            if self.kind == "jsonl":
                self._write_json(record)
            elif self.enabled:
                self._write_text(self._header_text(record))
        self._begin()

    def update(self, message: str, *, done: int | None = None, total: int | None = None,
               eta: float | None = None, force: bool = False, **fields: Any) -> None:
        """The run's current state: ``message`` for people, ``fields`` for tools; ``done`` of
        ``total`` gives an estimate of the time left (linear, unless the verb knows better
        and gives ``eta``, seconds from now). ``force`` writes a line now (a milestone: a BMC
        depth finished, a bench case started)."""
        if not self.enabled:
            return
        with self._lock:
            self._message = message
            self._fields = fields
            self._done, self._total = done, total
            self._eta = None if eta is None else (self._clock() + eta)
            self._pending = True
            due = force or self._clock() - self._last_line >= self.every
            if self.kind in ("plain", "jsonl") and due:
                self._write_status()
        if self._live is not None and due:  # outside the lock: the live thread takes its own
            self._last_line = self._clock()
            self._live.refresh()

    def note(self, message: str) -> None:
        """A remark on stderr (e.g. a default bound); a ``note`` record in jsonl mode."""
        if not self.enabled:
            return
        with self._lock:
            if self.kind == "jsonl":
                self._write_json({"type": "note", "tool": self.tool, "message": message})
            else:
                self._write_text(f"note: {message}")

    def finish(self, verdict: str, exit_code: int | None, **fields: Any) -> None:
        """The run's outcome: the live line goes, the summary is written; what the verb
        prints next cannot be mixed with progress."""
        if self._summary is None:
            self._summary = {"verdict": verdict, "exit_code": exit_code, **fields}
            self._end(self._summary)

    # -- lifecycle --------------------------------------------------------------------------

    def _begin(self) -> None:
        if self.kind == "live" and self._live is None:
            self._live = Live(console=self.console, get_renderable=self._renderable,
                              refresh_per_second=max(1.0, 1 / max(self.every, 0.05)),
                              transient=True, redirect_stdout=False, redirect_stderr=False)
            self._live.start()
        elif self.kind in ("plain", "jsonl") and self._ticker is None and self.every > 0:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()

    def close(self, error: BaseException | None = None) -> None:
        """End of the run: the summary, if ``finish`` has not written it (an error)."""
        if self._summary is not None:
            return
        interrupted = isinstance(error, KeyboardInterrupt)
        self._summary = {"verdict": "interrupted" if interrupted else "error",
                         "exit_code": 130 if interrupted else 2}
        if error is not None and not interrupted:
            self._summary.update(error_fields(error))
        self._end(self._summary)
        if error is not None and self.kind == "jsonl":
            setattr(error, SUMMARY_WRITTEN, True)

    def _end(self, summary: dict[str, Any]) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        if self._live is not None:
            self._live.stop()
            self._live = None
        if not self.enabled:
            return
        with self._lock:
            if self._pending:
                self._write_status()
            elapsed = self._clock() - self.start
            peak = max(peak_rss_bytes(), self._peak_rss)
            record = {"type": "summary", "tool": self.tool, **summary,
                      "elapsed": round(elapsed, 3), "peak_rss_bytes": peak}
            if self.kind == "jsonl":
                self._write_json(record)
            elif self.kind == "plain":
                self._write_text(f"[{duration(elapsed)}] {self.tool}: finished, "
                                 f"{summary['verdict']} (exit {summary['exit_code']}); "
                                 f"peak rss {mib(record['peak_rss_bytes'])}")

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            with self._lock:
                if self._header_written and self._clock() - self._last_line >= self.every:
                    self._write_status()

    # -- rendering --------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The current ``progress`` record."""
        elapsed = self._clock() - self.start
        now = self.start + elapsed
        eta = (eta_seconds(elapsed, self._done, self._total) if self._eta is None
               else max(0.0, self._eta - now))
        rss = rss_bytes()
        self._peak_rss = max(self._peak_rss, rss)
        return {"type": "progress", "tool": self.tool, "elapsed": round(elapsed, 3),
                "rss_bytes": rss, "message": self._message, "done": self._done,
                "total": self._total,
                "eta_seconds": None if eta is None else round(eta, 1), **self._fields}

    def status_text(self, width: int | None = None) -> str:
        """The status for people: clock, message, count, estimate, memory. Within ``width``
        columns the message is what gets cut, so the clock, estimate and memory stay."""
        r = self.status()
        head = f"[{duration(r['elapsed'])}] {self.tool}: "
        tail = []
        if r["done"] is not None and r["total"] is not None:
            tail.append(f"{r['done']:,}/{r['total']:,}")
        if r["eta_seconds"] is not None:
            tail.append(f"eta {duration(r['eta_seconds'])}")
        tail.append(f"rss {mib(r['rss_bytes'])}")
        end = "  " + "  ".join(tail)
        message = r["message"]
        if width is not None:
            room = width - 1 - len(head) - len(end)
            if room < 12:  # too narrow to keep both ends: cut the whole line
                return fit(head + message + end, width)
            message = fit(message, room + 1)
        return head + message + end

    def _renderable(self) -> Text:
        # no lock: the live thread reads a few fields; a torn read only shows for 1/4 s
        return Text(self.status_text(self.console.width), no_wrap=True, overflow="ellipsis")

    def _header_text(self, record: dict[str, Any]) -> str:
        params = " ".join(f"{k}={v}" for k, v in record["params"].items())
        text = f"{self.tool}"
        if record["spec"]:
            text += f" {record['spec']}"
        if params:
            text += f" ({params})"
        if record["engine"]:
            text += f"; engine {record['engine']}"
        bounds = ", ".join(f"{k} {_value_text(k, v)}" for k, v in record["bounds"].items())
        if bounds:
            text += f"; bounds: {bounds}"
        skip = {"type", "schema", "tool", "spec", "params", "engine", "bounds", "started"}
        more = ", ".join(f"{k} {v}" for k, v in record.items() if k not in skip)
        if more:
            text += f"; {more}"
        return text

    def _write_status(self) -> None:
        self._pending = False
        self._last_line = self._clock()
        if self.kind == "jsonl":
            self._write_json(self.status())
        elif self.kind == "plain":
            self._write_text(self.status_text())

    def _write_json(self, record: dict[str, Any]) -> None:
        self.stream.write(json.dumps(record, default=str) + "\n")
        self.stream.flush()

    def _write_text(self, text: str) -> None:
        if self._live is not None:  # above the live line, which is redrawn below it
            self._live.console.print(text, markup=False, highlight=False, soft_wrap=True)
            return
        if self.kind == "live":
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)
            return
        self.stream.write(text + "\n")
        self.stream.flush()


def add_progress_args(p: argparse.ArgumentParser) -> None:
    """``--progress MODE`` and ``--progress-every SECONDS``, the same on every verb."""
    p.add_argument("--progress", choices=MODES, default="auto",
                   help="progress on stderr, header first: auto (a live line on a terminal, "
                        "else nothing; the default), always (live on a terminal, else plain "
                        "lines), plain (a line every --progress-every seconds), jsonl (one "
                        "JSON object per line for tools; schema coherence/schemas/"
                        "progress.json; stdout keeps --json's document), never")
    p.add_argument("--progress-every", type=_seconds, metavar="SECONDS",
                   help="seconds between progress lines (default: 10 plain, 1 jsonl, "
                        "0.25 live; 0: at every report)")


def _seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


_seconds.__name__ = "seconds"


SUMMARY_WRITTEN = "coherence_jsonl_summary_written"  # marks an error a stream has reported


def error_fields(error: BaseException) -> dict[str, Any]:
    """A failed run's ``message`` and, for bad input, its ``location`` (``file:line:col``)."""
    message = getattr(error, "message", None)
    fields: dict[str, Any] = {"message": message if isinstance(message, str) else str(error)}
    location = getattr(error, "location", None)
    if callable(location):
        fields["location"] = location()
    return fields


def write_error_summary(tool: str, error: BaseException, exit_code: int,
                        stream: IO[str] | None = None) -> None:
    """The one ``summary`` record of a jsonl stream that failed before its run began (bad
    input found while the command line was read), so a tool's stream stays all JSON."""
    if getattr(error, SUMMARY_WRITTEN, False):
        return
    out = stream if stream is not None else sys.stderr
    record = {"type": "summary", "tool": tool, "verdict": "error", "exit_code": exit_code,
              **error_fields(error)}
    out.write(json.dumps(record) + "\n")
    out.flush()


def reporter(args: argparse.Namespace, tool: str) -> AbstractContextManager[Reporter]:
    """The run's reporter, as ``--progress`` and ``--progress-every`` ask."""
    return reporting(tool, getattr(args, "progress", "never"),
                     getattr(args, "progress_every", None))


@contextmanager
def reporting(tool: str, mode: str = "never", every: float | None = None,
              console: Console | None = None,
              stream: IO[str] | None = None) -> Iterator[Reporter]:
    """A ``Reporter`` whose summary is written however the block ends."""
    rep = Reporter(tool, mode, every, console, stream)
    try:
        yield rep
    except BaseException as err:
        rep.close(err)
        raise
    rep.close()


def check_progress(rep: Reporter, max_states: int | None = None
                   ) -> Callable[[Progress], None] | None:
    """The engines' callback (``CheckOptions.progress``) feeding ``rep``; the estimate is
    against ``max_states`` where one is set (the search may well end sooner)."""
    if not rep.enabled:
        return None

    def report(p: Progress) -> None:
        rate = p.states / p.elapsed if p.elapsed > 0 else 0.0
        rep.update(f"states {p.states:,}  frontier {p.frontier:,}  depth {p.depth}  "
                   f"rules {p.rules:,}  {rate:,.0f} states/s",
                   done=p.states if max_states else None, total=max_states,
                   states=p.states, frontier=p.frontier, depth=p.depth, rules=p.rules,
                   states_per_second=round(rate, 1))
    return report
