"""Benchmarks of eqiforge against PyTorch eager, torch.compile and
FlashAttention (SDPA): the workloads, their physical floors, the runner and
the report. See bench/README.md."""
