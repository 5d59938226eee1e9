"""Why is this line slow: work per op (FLOPs, bytes), achieved throughput against the device's
peaks (TFLOP/s, % of peak, MFU per step), the roofline bound per kernel and line, where the GPU
idles in a step, and suggestions with a gain estimated from the run's own measurements.

Capture side (``--flops``, torch at session build time only; nothing from the report side):
:mod:`.signature` (the recorded input signatures), :mod:`.flops` (torch's FLOP formulas),
:mod:`.traffic` (bytes from tensor sizes), :mod:`.annotate` (work onto op nodes, called by
:func:`dlpt.assemble.build_session`) and :mod:`.probe` (a pinned-copy measurement after the
profile).

Report side (plain session data, no torch): :mod:`.peaks` (datasheet table), :mod:`.analysis`
(shared inputs: the report's folded tree), :mod:`.work`, :mod:`.roofline`, :mod:`.mfu`,
:mod:`.idle`, :mod:`.finding`, :mod:`.rules` (one module per suggestion), :mod:`.suggest` (run,
rank, saved or derived), :mod:`.view` and :mod:`.work_view` (terminal).

Between them, :mod:`.stop`: what :mod:`dlpt.profiler` adds to a built session at stop (the
probe, and the suggestions the report side derives).
"""
