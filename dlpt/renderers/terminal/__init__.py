"""Console views of a session, each a lazily laid-out rich renderable (:class:`.base.View`): the
header, tree and flat views, summary tables and the torch.compile section. They never print;
:mod:`dlpt.renderers.terminal.report` picks and assembles them.
"""
