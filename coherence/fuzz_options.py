"""The choices and defaults of a fuzz run, shared by ``coherence fuzz`` (whose parser is built
for every verb, so this module imports nothing: Hypothesis alone takes 0.2 s to import) and
the pytest API (``coherence.testing``)."""

DEFAULT_BUDGET = 1000
DEFAULT_STEPS = 50
# "replay" (the default) minimises the first failing run by replay, in well under a second;
# Hypothesis's own shrinker ("hypothesis", "both") is thorough but re-runs hundreds of whole
# examples, minutes for 8 agents and 4 lines (see docs/fuzz.md for measurements).
SHRINKERS = ("replay", "both", "hypothesis", "none")
# "performed": coherence with each line's stores ordered as they were performed, as the
# checker's `property NAME: coherence` defines it (``check_performed``)
ORACLES = ("coherence", "sc", "performed", "none")
