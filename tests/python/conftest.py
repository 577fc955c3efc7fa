"""Test-wide setup.

Triton reads TRITON_INTERPRET when a kernel is decorated, so it must be set
before any test module imports triton; these tests run the emitted kernels
with Triton's CPU interpreter on CPU tensors.
"""
import os

os.environ.setdefault("TRITON_INTERPRET", "1")
