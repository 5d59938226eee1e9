"""Capture under many ranks (torchrun, SLURM, MPI, an initialised process group): which rank this
process is (:mod:`.env`), the Python-level collectives on CPU process groups timed as ops
(:mod:`.pycomm`), and communication marked in the node table at stop (:mod:`.annotate`).
dlpt adds no network code: the ranks' sessions meet on the filesystem."""
