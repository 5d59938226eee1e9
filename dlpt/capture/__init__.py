"""Capture: everything that runs while the program runs, and the session it produces.

The profile's lifecycle (:mod:`.profiler`), steps (:mod:`.steps`, :mod:`.step_on`), named
regions (:mod:`.scope`), what a profile records beside the native core (:mod:`.recorder`,
:mod:`.recorders`), joining a running profile (:mod:`.joining`) and forked children
(:mod:`.forking`), the native core's bridge (:mod:`.native`, the only importer of
``dlpt._C``), backward passes without op records (:mod:`.backward_records`), source text saved at
stop (:mod:`.source_text`), the session's assembly (:mod:`.assemble`), torch.compile's internals
(:mod:`.compile`), op work for ``--flops`` (:mod:`.flops`), many ranks (:mod:`.ranks`), the
pinned-copy measurement after a profile (:mod:`.pinned_probe`), running code once the
program imports a module (:mod:`.import_hooks`), and the host sampler and timeline window
(:mod:`.host`; into the session: :mod:`.host_session`, :mod:`.timeline`).

Capture builds sessions (:mod:`dlpt.model`); it never imports analysis or a renderer.
"""
