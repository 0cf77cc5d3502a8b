"""Configuration files shipped with the package (``align.yaml``: the auto aligner table)."""
