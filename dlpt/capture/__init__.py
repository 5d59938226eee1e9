"""Capture-time helpers around the native core: loading ``dlpt._C`` and translating what it
exports into session nodes (:mod:`.native`), kernel display names (:mod:`.kernel_names`) and
library-exec'd frames (:mod:`.exec_frames`).

Code here runs while or right after a profile records; it never imports the report side
(:mod:`dlpt.processors`, :mod:`dlpt.renderers`). torch.compile specifics live in
:mod:`dlpt.compile`.
"""
