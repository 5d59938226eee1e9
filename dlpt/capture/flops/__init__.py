"""Work per op at session build time (``--flops``): the input signatures the native core records
(:mod:`.signature`), FLOPs from torch's own formulas (:mod:`.formulas`, the only module here
that imports torch), bytes moved estimated from tensor sizes (:mod:`.traffic`), and both put on
the op nodes of the node table (:mod:`.annotate`)."""
