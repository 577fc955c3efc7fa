"""What runs after the search: loading emitted Triton modules, verifying and
tuning candidates, launching the chosen one, caching and reporting.

- search.py    the one door into the C++ core (extraction, emission)
- loader.py    importing an emitted module for the GPU or the interpreter
- verify.py    candidate vs PyTorch eager on fresh random inputs
- tuner.py     configurations, successive halving, the tuner
- launch.py    argument binding, the lean launch path, CUDA graphs
- cache.py     the on-disk cache of tuned programs
- measure.py   same-run timings for the report
- report.py    the report and its SVG picture
- progress.py  progress output
- fallback.py  running what the IR cannot express in PyTorch
"""
