"""The LLM judge outside EvalScope: its prompt and verdicts, and the check it passes before a run."""
