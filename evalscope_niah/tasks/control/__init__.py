"""The needle-absent control: every task's needle-free cells are scored here.

The task type is in ``task.py``; the package imports nothing, so importing one of its data modules never imports
the task type (and with it ``tasks/base.py``, which imports the needle bank)."""
