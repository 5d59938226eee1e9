"""What renderers and front ends format: one view per report kind, each made once and handed to
every output of its kind. :mod:`.run` (:class:`~dlpt.views.run.RunView`: a run's terminal
report, HTML report and exports), :mod:`.ranks` (:class:`~dlpt.views.ranks.RanksView`: the
report across a job's ranks, in the terminal and as a page) and :mod:`.diff`
(:class:`~dlpt.views.diff.DiffView`: ``dlpt diff``, in the terminal and as a page).

A view resolves the metric once and hands out shaped trees and rows; renderers only format
them. Views sit between the analysis and the renderers: a renderer imports the views and the
model, never the analysis (tests/unit/test_layers.py holds it), so each view module names the
types of what it hands out.
"""
