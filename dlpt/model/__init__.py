"""The data model: what a profile *is*, independent of how it was captured or shown.

A :class:`~dlpt.model.session.Session` (plain, versioned data: a flat node table plus ``meta``;
:mod:`.schema` types the loosely typed parts), the in-memory tree built from it (:mod:`.tree`),
small functions over trees (:mod:`.processors`), the folded tree every output shows
(:mod:`.folding`), per-node pass contexts (:mod:`.node_contexts`), and the naming knowledge the
other stages share: whose file a frame is (:mod:`.source_files`), kernel display names
(:mod:`.kernel_names`), what is communication (:mod:`.comm_names`), Dynamo's resume functions
(:mod:`.resume_names`), torch.compile events as saved (:mod:`.compile_events`), one output file
per rank (:mod:`.rank_paths`). Files are read and written only through :mod:`.safe_files`.

Nothing here imports torch at module level, rich, or any other stage of dlpt.
"""
