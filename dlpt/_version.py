"""dlpt's version, in one place: the package face (``dlpt.__version__``), the build
(pyproject.toml reads it from here), and every layer that writes it (session meta, exports, the
command line's ``--version``) take it from this module, which imports nothing, so no module
below the face has to import the face for it."""

__version__ = "0.2.0"
