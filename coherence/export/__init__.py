"""Exporters: the IR translated to other model checkers' languages, for cross-checks.

``murphi`` writes a Murphi model for Rumur; ``rumur`` compiles and runs it. Each exporter
reads only the IR (never the semantics' closures), as every back end must.
"""
