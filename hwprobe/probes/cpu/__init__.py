"""CPU probes (numba): FMA peak on all cores and STREAM."""
