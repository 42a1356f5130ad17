"""Re-binding a loaded model to other parameter values in memory (``spec.load.rebind``): the
proof for every N binds the spec to other agent counts and must keep the command line's
``--param`` values and ``--skip`` choices, without reading the file again."""

from __future__ import annotations

import shutil
from pathlib import Path

import attrs
import pytest

from coherence.errors import SpecError
from coherence.spec.load import load_spec, load_spec_text, rebind
from coherence.spec.select import drop_properties

SPECS = Path(__file__).resolve().parent.parent / "specs"
ACKED = SPECS / "broadcast_invalidate_acked.coh"


def test_rebind_keeps_overrides_and_the_selection() -> None:
    model = drop_properties(load_spec(ACKED, {"capacity": 5}), ["coherent"])
    assert model.param("capacity") == 5 and model.properties == ()
    other = rebind(model, {"agents": 3})
    assert other.agents == 3 and other.param("agents") == 3
    assert other.param("capacity") == 5
    assert [n.capacity for n in other.networks] == [n.capacity for n in model.networks]
    assert other.properties == ()
    assert [i.name for i in other.invariants] == [i.name for i in model.invariants]
    # the file's defaults are not what was kept
    assert load_spec(ACKED).param("capacity") != 5


def test_rebind_to_the_same_values_is_the_same_ir() -> None:
    model = load_spec(ACKED, {"capacity": 5, "agents": 3})
    assert rebind(model, {}) == model
    assert rebind(model, {"agents": 2}) != model


def test_rebind_drops_what_was_skipped_even_if_it_is_an_invariant() -> None:
    model = load_spec(ACKED)
    first = model.invariants[0].name
    other = rebind(drop_properties(model, [first]), {"agents": 3})
    assert first not in {i.name for i in other.invariants}
    assert len(other.invariants) == len(model.invariants) - 1
    assert [p.name for p in other.properties] == [p.name for p in model.properties]


def test_rebind_does_not_read_the_file_again(tmp_path: Path) -> None:
    path = tmp_path / "acked.coh"
    shutil.copy(ACKED, path)
    model = load_spec(path, {"capacity": 5})
    path.write_text("this is not a spec\n")
    other = rebind(model, {"agents": 3})
    assert other.agents == 3 and other.param("capacity") == 5
    path.unlink()
    assert rebind(other, {"agents": 2}).agents == 2


def test_rebind_checks_ranges_like_the_command_line() -> None:
    model = load_spec_text("param agents = 2 range 2..3;\nparam k = 1 range 0..4;\n"
                           "cache machine C { stable state I; init I; }\n", "r.coh")
    assert rebind(model, {"agents": 3, "k": 4}).param("k") == 4
    with pytest.raises(SpecError, match=r"must be in 2\.\.3"):
        rebind(model, {"agents": 4})
    with pytest.raises(SpecError, match="no parameter 'nosuch'"):
        rebind(model, {"nosuch": 1})


def test_a_model_not_loaded_from_a_spec_cannot_be_rebound() -> None:
    model = attrs.evolve(load_spec(ACKED), origin=None)
    with pytest.raises(SpecError, match="not loaded from a spec"):
        rebind(model, {"agents": 3})
