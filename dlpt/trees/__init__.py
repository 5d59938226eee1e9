"""The session's tree reshaped for a report: library frames folded into their callers, pruned,
depth-limited, inverted, flattened by line, op or kernel (:mod:`dlpt.trees.processors`), folded
once from the flat node table for a million-node session (:mod:`dlpt.trees.folding`), each
node's context (forward, backward, optimizer: :mod:`dlpt.trees.node_contexts`) and per-step
spreads (:mod:`dlpt.trees.spread`). Capture never uses it; analysis and the views build on it."""
