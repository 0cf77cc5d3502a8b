"""The decoding engine shared by training (validation decodes, thresholds), restoring,
export and the benchmarks: windows -> model -> aggregated word probabilities
(:mod:`punct.engine.decode`, :mod:`punct.engine.aggregate`), the decision with its
thresholds and combinations, the document rules and constrained decoding
(:mod:`punct.engine.constraints`, :mod:`punct.engine.doc_rules`), precision and int8."""
