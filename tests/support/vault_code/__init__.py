"""A task added as one folder: its type and parameter (``task.py``) and its data (``vault.json``). Registered by
one line, ``register_task(VaultCode)``; tests/tasks/test_task_folder.py runs it through preview and a real run."""
