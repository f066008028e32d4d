"""Test doubles shipped with the package, so the tests and the benchmarks import them without reaching into tests/.

Standard library only at import time: a benchmark replaying requests starts one where EvalScope is not installed.
"""
