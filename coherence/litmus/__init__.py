"""Litmus programs: the format, the catalogue, runs on a protocol model, the SC baseline and
the comparison with observed (hardware) outcomes. Pure Python: the CuPy harness that runs the
same programs on GPUs lives in ``coherence.hw``."""

from coherence.litmus.catalogue import find_test, load_catalogue
from coherence.litmus.compare import Comparison, compare
from coherence.litmus.model import ModelResult, model_overrides, run_on_model
from coherence.litmus.parse import load_litmus, parse_litmus
from coherence.litmus.program import Litmus, Op
from coherence.litmus.sc import sc_outcomes
from coherence.litmus.variants import VARIANTS, apply_variant

__all__ = ["VARIANTS", "Comparison", "Litmus", "ModelResult", "Op", "apply_variant", "compare",
           "find_test", "load_catalogue", "load_litmus", "model_overrides", "parse_litmus",
           "run_on_model", "sc_outcomes"]
