"""Front-ends: each formats the report model (:mod:`dlpt.analysis.report`) and the folded tree;
none computes a fact of its own. :mod:`.terminal` (rich), :mod:`.html` (one self-contained
page), :mod:`.exports` (speedscope, folded stacks)."""
