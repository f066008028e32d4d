"""RULER's needle-in-a-haystack family (its eight ``niah_*`` entries of ``synthetic.yaml``) driven by RULER's own
arguments: ``presets.py`` (the eight entries as data), ``words.py`` (the key word list), ``picks.py`` (keys, values,
needles and the generated haystacks), ``params.py``, ``rules.py`` and the task type in ``task.py``.

The package imports nothing, so importing one of its data modules never imports the task type."""
