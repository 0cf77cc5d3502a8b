"""Helpers shared by the test modules (pytest puts tests/ on ``sys.path``, so they are
imported as ``helpers.<module>``). Test modules import these, never one another.

- :mod:`helpers.tiny`: untrained experiment dirs and the last-piece slot families' words.
- :mod:`helpers.tinybert`: a tiny random BERT with its WordPiece tokenizer.
- :mod:`helpers.trainset`: a learnable synthetic word table and a tiny BRNN config.
- :mod:`helpers.rules`: a rule-based featurizer/model pair for the decoding engine.
- :mod:`helpers.synthetic`: synthetic sequences of the prosodic-phrase and UniPunc tests.
- :mod:`helpers.testcluster`: a one-node Slurm cluster for the launcher tests.
"""
