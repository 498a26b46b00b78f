"""The same-run matmul peaks live in kiln.profiler.peak (the profiler needs them too and sits
below the harness); the harness keeps importing them from here."""

from ..profiler.peak import bf16_matmul_gflops, copy_gbps, sgemm_gflops

__all__ = ["bf16_matmul_gflops", "copy_gbps", "sgemm_gflops"]
