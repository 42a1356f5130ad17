"""A user's own test of a protocol model: `python -m pytest examples/test_my_protocol.py`.

Random runs of the acknowledged broadcast-invalidate protocol with 8 GPUs and 4 lines (too many
to enumerate), checking its invariants and per-location coherence after every step.
"""
from coherence.testing import protocol_test

# a relative path is found beside this file, so the test runs from any folder; 100 runs
# (the default, 1,000 runs as `coherence fuzz`, takes about a minute at 8 GPUs and 4 lines)
TestAcked = protocol_test("../specs/broadcast_invalidate_acked.coh", agents=8, lines=4,
                          params={"capacity": 64}, max_examples=100)
