"""coherence: model, verify and hardware-check cache-coherence protocols from one spec."""

from coherence.errors import SpecError
from coherence.spec.load import load_spec, load_spec_text

__all__ = ["SpecError", "load_spec", "load_spec_text"]
__version__ = "0.1.0"
