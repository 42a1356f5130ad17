"""The packed layout: every reachable state survives state -> bits -> state, in its width."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import first_states, flat_specs
from hypothesis import given, settings
from hypothesis import strategies as st

from coherence.layout import Layout, LayoutError, SlotKind
from coherence.semantics import UNDEF, Semantics
from coherence.spec.load import load_spec, load_spec_text

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.coh"))
MUTANTS = sorted((ROOT / "specs" / "mutants").glob("*.coh"))
GOLDEN = sorted((ROOT / "tests" / "specs" / "golden").glob("*.coh"))
HIERARCHICAL = set(SPECS) - set(flat_specs(ROOT / "specs"))


def test_spec_lists_are_not_empty() -> None:
    assert len(SPECS) >= 8 and len(MUTANTS) >= 30 and GOLDEN


def round_trip(path: Path, agents: int, cap: int) -> int:
    """``agents`` sizes a flat spec; a hierarchical one gets ``agents`` GPUs of 2 SMs."""
    sizes = {"gpus": agents, "sms": 2} if path in HIERARCHICAL else {"agents": agents}
    model = load_spec(str(path), sizes)
    layout = Layout(model)
    states = first_states(Semantics(model), cap)
    for s in states:
        code = layout.pack(s)
        assert 0 <= code < 1 << layout.bits
        assert layout.unpack(code) == s
        assert layout.from_bytes(layout.to_bytes(code)) == code
    return len(states)


@pytest.mark.parametrize("path", SPECS + GOLDEN, ids=lambda p: p.stem)
@pytest.mark.parametrize("agents", [2, 3])
def test_round_trip_specs(path: Path, agents: int) -> None:
    assert round_trip(path, agents, 400) > 1


@pytest.mark.parametrize("path", MUTANTS, ids=lambda p: p.stem)
def test_round_trip_mutants(path: Path) -> None:
    assert round_trip(path, 2, 150) > 1


@pytest.mark.slow
@pytest.mark.parametrize("path", SPECS + MUTANTS + GOLDEN, ids=lambda p: p.stem)
def test_round_trip_many_states(path: Path) -> None:
    assert round_trip(path, 3, 20_000) > 1


def test_german_at_five_caches_fits_in_two_words() -> None:
    layout = Layout(load_spec(str(ROOT / "specs" / "german.coh"), {"agents": 5}))
    # 3 fifo networks: only cache->home or home->cache queues take bits (10 per network)
    assert [len(n.pairs) for n in layout.nets] == [5, 5, 5]
    assert layout.bits <= 128 and layout.words == 2


def test_agent_blocks_partition_the_cache_slots() -> None:
    layout = Layout(load_spec(str(ROOT / "specs" / "german.coh"), {"agents": 3}))
    blocks = layout.agent_slots
    assert len(blocks) == 3
    assert all(len(b) == len(blocks[0]) > 0 for b in blocks)
    assert not set(blocks[0]) & set(blocks[1])
    # the home's CurPtr names an agent: symmetry renames it
    cur_ptr = next(s for s in layout.slots if s.name.endswith("Home.CurPtr"))
    assert cur_ptr.renames and cur_ptr.agent is None
    assert next(s for s in layout.slots if s.name.endswith("Home.MemData")).renames is False


def test_slots_tile_the_state_without_overlap() -> None:
    layout = Layout(load_spec(str(ROOT / "specs" / "mesi_directory.coh"), {"agents": 3}))
    offset = 0
    for s in layout.slots:
        assert s.offset == offset
        offset += s.width
    assert offset == layout.bits
    kinds = {s.kind for s in layout.slots}
    assert {SlotKind.STATE, SlotKind.VALUE, SlotKind.RECORD, SlotKind.ENTRY} <= kinds


WIDE = """
param agents = 2;
message Big(a: int[0..60000], b: int[0..60000], c: int[0..60000], d: int[0..60000]) on net;
network net: unordered, capacity = 2;
home machine H { stable state R; init R; on Big { } }
cache machine C { stable state I; init I; rule go { send Big(0, 0, 0, 0) to home; } }
"""


def test_records_wider_than_a_word_are_refused() -> None:
    with pytest.raises(LayoutError, match="at most 64"):
        Layout(load_spec_text(WIDE, "wide.coh"))


UNDEF_ARRAY = """
param agents = 2;
home machine H {
  stable state R; init R;
  var a: array<agent, int[0..3]> = 0;
  rule clear { undefine a; }
  rule set(i: agent, v: int[0..3]) when !isundefined(a[i]) { a[i] := v; }
}
cache machine C { stable state I; init I; }
"""


def test_a_whole_array_can_be_undefined() -> None:
    model = load_spec_text(UNDEF_ARRAY, "undef_array.coh")
    layout = Layout(model)
    assert any(s.kind is SlotKind.DEFINED for s in layout.slots)
    assert round_trip_model(model) > 2


def round_trip_model(model) -> int:  # type: ignore[no-untyped-def]
    layout = Layout(model)
    states = first_states(Semantics(model), 1000)
    for s in states:
        assert layout.unpack(layout.pack(s)) == s
    return len(states)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_values_round_trip(data: st.DataObject) -> None:
    """Any in-range value (or undefined) in any slot of German at 3 caches round-trips."""
    model = load_spec(str(ROOT / "specs" / "german.coh"), {"agents": 3})
    layout = Layout(model)
    (state,) = Semantics(model).initial_states()
    lines, nets, monitor = state
    g, h, caches = lines[0]
    home = (h[0], *(data.draw(st.one_of(st.just(UNDEF), st.integers(lo, lo + size - 1)))
                    for lo, size in [(0, 8), (0, 8), (0, 3), (0, 3), (0, 2), (0, 2)]))
    new = (((g, home, caches),), nets, monitor)
    assert layout.unpack(layout.pack(new)) == new
