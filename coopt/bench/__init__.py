"""The benchmark: exact optima against heuristics over instance families (:mod:`.runner`), its
metrics as pure functions (:mod:`.metrics`) and the report with its plots (:mod:`.report`)."""
