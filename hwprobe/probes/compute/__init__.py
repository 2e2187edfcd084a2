"""Compute probes: CUDA-core FMA chains, mma.sync/wgmma, library GEMMs (cuBLAS, cuBLASLt, cuSPARSELt),
the roofline trace."""
