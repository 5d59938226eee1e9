"""The command line: ``python -m dlpt`` (:mod:`.main`: arguments and the run's orchestration),
``dlpt diff`` (:mod:`.diff`), running the program as python would (:mod:`.launch`), signals
around a run (:mod:`.signals`), the files a run writes besides the session (:mod:`.outputs`),
and the end of one rank's run (:mod:`.gather`, :mod:`.rank_finish`)."""
