"""A chain of linked needles (OpenCompass CDME): ``chains.py`` reads ``chains.json``.

The task type is in ``task.py``; the package imports nothing, so importing one of its data modules never imports
the task type (and with it ``tasks/base.py``, which imports the needle bank)."""
