#!/usr/bin/env python3
"""Cost of the Python layer: `clustertwin.run` on the default scenario N times from Python, against
the same N runs in C++ with no Python in between (the module's `_run_native_loop`).

    PYTHONPATH=build/python python3 bench/bench_python.py [N]

Prints seconds per run for both and their ratio (the target is <= 1.2).
"""
import sys
import time

import clustertwin as ct
from clustertwin import _clustertwin as core


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    scenario = ct.Scenario.default()
    ct.run(scenario)  # warm caches (profile parsing, allocator)
    start = time.perf_counter()
    for _ in range(n):
        ct.run(scenario)
    python_s = (time.perf_counter() - start) / n
    native_s = core._run_native_loop(scenario._native, n) / n
    print(f"runs: {n}  python: {python_s * 1e3:.2f} ms/run  C++: {native_s * 1e3:.2f} ms/run  "
          f"ratio: {python_s / native_s:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
