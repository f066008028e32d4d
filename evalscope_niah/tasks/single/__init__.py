"""The classic task: the subset's needle or a needle-bank pick (``bank.py``, ``needle_bank.jsonl``).

The task type is in ``task.py``; the package imports nothing, so importing one of its data modules never imports
the task type (and with it ``tasks/base.py``, which imports the needle bank)."""
