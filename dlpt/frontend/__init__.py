"""What the front ends of a run share, below both: the command line (:mod:`dlpt.cli`) and the
notebook magic (:mod:`dlpt.notebook`). A run's options, parsed once into a frozen
:class:`~dlpt.frontend.options.RunOptions` (:mod:`.parser`: the command line's and the magic's
options are one parser) and checked before the program runs; where its report goes
(:mod:`.report_target`) and its files (:mod:`.outputs`); the one ending every front end runs once
capture stops (:mod:`.ending`); the status line while it runs (:mod:`.status_line`); opening
the HTML report (:mod:`.open_report`).
"""
