"""The ranks of one job side by side: per-rank totals, the merged tree with each row's spread
across ranks (:mod:`.merge`), and the rank the others wait for (:mod:`.stragglers`)."""
