"""Parameters: the run's own typed model, subsets, grid axes, run-size limits and other tools' names. They sit below
the tasks, which read them; the flat ``extra_params`` that compose them with each task's own parameters are
``tasks.compose``, which needs the registered tasks.

This ``__init__`` imports nothing, so importing one parameter module loads only what it needs."""
