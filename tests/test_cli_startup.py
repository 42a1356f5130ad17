"""What the command line loads before a verb runs: every run builds the parser of every verb,
so a verb's options must not pull in what only its run needs (Hypothesis alone took 0.2 s of
the 0.6 s `coherence --help` took, on every verb)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

HEAVY = ("hypothesis", "z3", "graphviz", "cupy", "ray", "numpy")


def _modules_after(code: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", code + "\nimport json, sys\n"
                           "print(json.dumps(sorted(sys.modules)))"],
                          capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_building_the_parser_loads_no_back_end() -> None:
    loaded = _modules_after("from coherence.cli import build_parser\nbuild_parser()")
    assert "coherence.commands.fuzz" in loaded and "coherence.commands.bench_fuzz" in loaded
    assert not {m.split(".")[0] for m in loaded} & set(HEAVY), sorted(
        m for m in loaded if m.split(".")[0] in HEAVY)[:5]


def test_the_pytest_api_keeps_its_names() -> None:
    importlib.import_module("coherence.testing.fuzz")  # the submodule, as `coherence fuzz` does
    from coherence import fuzz_options
    from coherence.testing import DEFAULT_BUDGET, ORACLES, fuzz, protocol_test
    assert callable(fuzz) and fuzz.__module__ == "coherence.testing.fuzz" and callable(
        protocol_test)
    assert (DEFAULT_BUDGET, ORACLES) == (fuzz_options.DEFAULT_BUDGET, fuzz_options.ORACLES)
