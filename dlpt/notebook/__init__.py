"""dlpt in IPython and Jupyter: ``%load_ext dlpt``, then ``%dlpt statement`` or ``%%dlpt`` atop a
cell (:mod:`dlpt.notebook.magic`). IPython is imported only when the extension is loaded."""

from __future__ import annotations

from typing import Any

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Register the ``dlpt`` line and cell magic with ``ipython`` (``%load_ext dlpt``)."""
    from dlpt.notebook.magic import magic, shown_as_the_cells

    def dlpt(line: str, cell: str | None = None) -> None:
        __tracebackhide__ = True
        try:
            magic(ipython, line, cell)
        except SyntaxError as e:  # in the user's code: at its line of the cell, no dlpt frames
            if not shown_as_the_cells(e):
                raise  # raised by the code as it ran: its traceback as it is
            raise e.with_traceback(None) from None

    dlpt.__doc__ = _HELP
    ipython.register_magic_function(dlpt, magic_kind="line_cell", magic_name="dlpt")


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magic again (``%unload_ext dlpt``)."""
    magics = getattr(ipython, "magics_manager", None)
    if magics is not None:
        for kind in ("line", "cell"):
            magics.magics.get(kind, {}).pop("dlpt", None)


_HELP = """Profile a statement or a cell with dlpt and show the report below it.

    %dlpt [options] statement
    %%dlpt [options]        (atop a cell: profiles the cell's body)

Options: every option of the command line (python -m dlpt --help; %dlpt -h lists them), but
--load, --kernel-lines and the rank options, plus --inline-html. Among them:
    --view tree|bottom-up|flat|kernels|summary|suggestions|all
    --metric M        --threshold PCT     --depth N      --show-all    --ascii     --verbose
    --skip-first N    --active M          --step-on NAME --calibrate on|off        --no-gpu
    --nested-ops      --flops             --memory       --sample-hz N --timeline N
    --exact-ops       every op's CPU time on its line (GPU runs: ops that launch nothing are sampled)
    --pc-sampling     --peak-tflops N     --width N      --no-source
    -o FILE           save the session (python -m dlpt --load FILE shows it again)
    --html FILE       write the HTML report (--open: and open it in a browser)
    --export FMT FILE speedscope, folded or perfetto
    --report-file F   the text report to a file
    --inline-html     show the HTML report in the notebook
    --no-report       show no text report
    -q, --quiet       no status line, no "saved ..." lines
"""
