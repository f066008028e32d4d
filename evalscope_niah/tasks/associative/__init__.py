"""One-hop associative retrieval (NoLiMa's idea, our own pairs): ``pairs.py`` reads ``pairs.json``.

The task type is in ``task.py``; the package imports nothing, so importing one of its data modules never imports
the task type (and with it ``tasks/base.py``, which imports the needle bank)."""
