"""Calibration probes for predictions: launch floors, GEMM efficiency over model shapes, memory-bound kernels."""
