"""Many ranks, one profile each: dlpt under torchrun (or SLURM, MPI, any launcher that sets
RANK/WORLD_SIZE), communication as a cost of its own, and a report across ranks.

dlpt adds no network code: torch.distributed and its launcher move the data, and the ranks'
sessions meet on the filesystem (a shared path, or files gathered afterwards).

Capture side (imported by the profiler and the session assembly; no report code):

- :mod:`.env`: which rank this process is (environment, or torch.distributed at stop), and
  ``meta.distributed``.
- :mod:`.paths`: one output path per rank (``{rank}`` substituted, or ``.rankN`` before the
  extension), and ``--load`` patterns.
- :mod:`.comm`: what is communication (NCCL kernel names, c10d ops), NCCL's bus-bandwidth
  formulas. Plain functions, shared by both sides.
- :mod:`.pycomm`: while profiling, the Python-level ``torch.distributed`` collectives on CPU
  process groups (gloo) are wrapped, so their bytes are known and the time a rank waits for
  the others becomes an op of its own.
- :mod:`.annotate`: at stop, communication kernels and collective calls are marked in the node
  table (``comm_ns``, ``comm_wait_ns``, bytes, collective, algorithm).

Report side:

- :mod:`.comm_view`: one rank's communication (header lines, the collectives table).
- :mod:`.gather`: rank 0 waits, bounded, for the other ranks' session files.
- :mod:`.merge`, :mod:`.stragglers`, :mod:`.view`, :mod:`.spread_view`: the cross-rank report.
- :mod:`.finish`: what the command line does at the end of a rank's run.
"""
