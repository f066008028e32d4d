"""Several facts about one key among distractor facts (RULER multi-value / multi-key); ``facts.py``.

The task type is in ``task.py``; the package imports nothing, so importing one of its data modules never imports
the task type (and with it ``tasks/base.py``, which imports the needle bank)."""
