"""Every file dlpt reads or writes by path, and the rules it follows (below the session model,
which saves and loads through them): a file written atomically, through a symlink to its target,
never over a device, a FIFO or a directory (:mod:`dlpt.files.safe_files`,
:mod:`dlpt.files.write_target`); replaced only when dlpt wrote it (:mod:`dlpt.files.own_files`);
one file per rank of a job (:mod:`dlpt.files.rank_paths`)."""
