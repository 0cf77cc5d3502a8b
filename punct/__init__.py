"""punct: punctuation and capitalisation restoration recipes."""

__version__ = "0.1.0"
