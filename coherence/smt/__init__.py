"""Z3 back end: BMC, k-induction and proofs for every number of agents (``coherence prove``)."""
