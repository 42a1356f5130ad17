"""``protocol_test`` with its defaults catches the planted bugs that ``coherence fuzz`` finds
(the specs in specs/mutants/ and the seed's bug). Its default seed is fixed (0), so these
runs are deterministic; ``coherence bench fuzz`` measures the same against ``fuzz``.

Mutants whose planted bug is a livelock (every EXPECT a ``liveness`` property) are left
out: random runs check safety only, and neither path can find those."""

from __future__ import annotations

import unittest
from pathlib import Path
from typing import Any

import pytest

from coherence.mutants import parse_header
from coherence.testing import ProtocolTestFailure, load_model, protocol_test

ROOT = Path(__file__).resolve().parent.parent


def _safety_bug(path: Path) -> bool:
    liveness = {p.name for p in load_model(path).liveness}
    return not set(parse_header(path).expect) <= liveness


ALL = sorted((ROOT / "specs/mutants").glob("*.coh"))
MUTANTS = [p for p in ALL if _safety_bug(p)]
FAST = ["german_store_in_shared", "msi_snoop_owner_keeps_m",
        "mesi_snoop_memory_misses_exclusive", "msi_dir_early_ack_dropped"]


def _caught(spec: Path) -> Any:
    case: Any = protocol_test(spec)  # the defaults: 1,000 runs of 50 steps, seed 0
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(result)
    assert not result.errors, result.errors
    assert len(result.failures) == 1, f"{spec.name}: no failure in the default budget"
    assert ProtocolTestFailure.__name__ in result.failures[0][1]
    assert case.last_result.failure is not None
    return case.last_result


@pytest.mark.parametrize("name", FAST)
def test_default_settings_catch_the_mutant(name: str) -> None:
    r = _caught(ROOT / "specs/mutants" / f"{name}.coh")
    assert r.stats.examples_to_failure <= r.budget


def test_livelock_mutants_are_the_only_ones_left_out() -> None:
    left_out = {p.stem for p in ALL} - {p.stem for p in MUTANTS}
    assert {"acked_nack_retry", "msi_dir_puts_in_m_not_acked"} <= left_out
    assert not left_out & set(FAST)
    assert len(MUTANTS) >= 31


def test_default_settings_catch_the_seed_bug() -> None:
    r = _caught(ROOT / "specs/broadcast_invalidate.coh")
    assert r.failure.name in {"data_value", "stale_copy_is_doomed"}


@pytest.mark.slow
@pytest.mark.parametrize("spec", MUTANTS, ids=[p.stem for p in MUTANTS])
def test_default_settings_catch_every_mutant(spec: Path) -> None:
    _caught(spec)
