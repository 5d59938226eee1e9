"""Analysis: facts derived from a session, computed once and shown by every front-end.

The report model (:mod:`.report`: what a report says, as dataclasses of plain values and text),
work per op and line (:mod:`.work`), the roofline (:mod:`.roofline`) against datasheet peaks
(:mod:`.peaks`), MFU (:mod:`.mfu`), where a step's GPU idles (:mod:`.idle`), host time per
line and the lines the GPU waited for (:mod:`.host`), the timeline window's lanes
(:mod:`.timeline`), the suggestion
rules (:mod:`.rules`, one module each) and their ranking (:mod:`.suggest`), ``dlpt diff``'s
comparison (:mod:`.diff`) and the report across ranks (:mod:`.ranks`).

Reads sessions (:mod:`dlpt.model`), never captures, never prints: nothing here imports rich or
a renderer.
"""
