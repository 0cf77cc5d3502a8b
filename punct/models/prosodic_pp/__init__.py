"""The prosodic-phrase punctuation system (Moró & Szaszák 2017), family ``prosodic_pp``."""
