"""The TLA+ contracts, installed as the package ``resumecheck_spec``.

``pyproject.toml`` maps this folder into the wheel so that an installed resume-check finds its
contracts with ``importlib.resources`` wherever it lives; the folder stays the source of truth
in the repository. Nothing here is Python: every ``*.tla``, ``*.cfg`` and ``mutants/*.mutant``
is package data (see ``resumecheck.contract``).
"""
