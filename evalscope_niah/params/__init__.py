"""Parameters: the run's own typed model, subsets, grid axes, run-size limits, other tools' names, and the flat
``extra_params`` that compose them with each task's own (``compose``).

This ``__init__`` imports nothing: ``compose`` needs the tasks, and the tasks import ``run_params``; loading
``compose`` from here would close that circle at import time."""
