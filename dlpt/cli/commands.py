"""dlpt's commands for scripts and agents: ``dlpt query`` (:mod:`dlpt.cli.query`), ``dlpt verify``
(:mod:`dlpt.cli.verify`) and ``dlpt mcp`` (:mod:`dlpt.cli.mcp_server`), each imported only when
it runs (``dlpt mcp`` needs the optional ``mcp`` package)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["run_subcommand"]


def run_subcommand(name: str, argv: Sequence[str]) -> int:
    """Run the command ``name`` with ``argv``; its exit status."""
    if name == "query":
        from dlpt.cli.query import main as query_main

        return query_main(argv)
    if name == "verify":
        from dlpt.cli.verify import main as verify_main

        return verify_main(argv)
    from dlpt.cli.mcp_server import main as mcp_main

    return mcp_main(argv)
