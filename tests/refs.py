"""The committed reference runs the tests read, named once: when profiles/ is pruned again, this file changes
and the tests follow. test_committed_profiles.py checks that every folder a test or tool names still exists."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "profiles"

# the full suite, one run per GPU kind (records gzipped)
H200_FULL = PROFILES / "h200-sxm" / "2026-11-26-full"
H100_FULL = PROFILES / "h100-sxm" / "2026-11-26-full"
# the default suite (H100's is a schema-1 run: the migration path of old profiles)
H200_DEFAULT = PROFILES / "h200-sxm" / "2026-11-25-default"
H100_DEFAULT = PROFILES / "h100-sxm" / "2026-11-21-default"
# the predict suite (calibration) and the model timings its predictions are validated against
H200_PREDICT = PROFILES / "h200-sxm" / "2026-11-26-predict-conv"
H100_PREDICT = PROFILES / "h100-sxm" / "2026-11-26-predict-conv"
H200_VALIDATION = PROFILES / "h200-sxm" / "2026-11-26-validation-conv"
H100_VALIDATION = PROFILES / "h100-sxm" / "2026-11-26-validation-conv"
# the earlier H200 calibration with its own validation set (LLM timings, kernel lists of one forward)
H200_PREDICT_COLD = PROFILES / "h200-sxm" / "2026-11-26-predict-cold"
H200_VALIDATION_COLD = PROFILES / "h200-sxm" / "2026-11-26-validation-cold"
# the stability suite, and the compute suite at several application clocks
H200_STABILITY = PROFILES / "h200-sxm" / "2026-11-25-stability"
H100_STABILITY = PROFILES / "h100-sxm" / "2026-11-25-stability"
H200_COMPUTE_CLOCKS = PROFILES / "h200-sxm" / "2026-11-24-compute-clocks"
H200_CLOCK_POWER = PROFILES / "h200-sxm" / "2026-11-26-clock-power-checks"
# a default run beside a second process holding the GPU's memory, or its SMs
H200_SHARED_MEMHOG = PROFILES / "h200-sxm" / "2026-11-25-shared-memhog"
H200_SHARED_SMHOG = PROFILES / "h200-sxm" / "2026-11-25-shared-smhog"
# hwprobe's L2 figure beside gpu-benches' in the same lease
H200_L2_GPUBENCHES = PROFILES / "h200-sxm" / "2026-11-26-l2-gpubenches"
H100_L2_GPUBENCHES = PROFILES / "h100-sxm" / "2026-11-26-l2-gpubenches"
# two H200s: the multigpu suite (local and under MPI) and the tensor-parallel LLM timings
H200X2_MULTIGPU = PROFILES / "h200x2" / "2026-11-26-multigpu"
H200X2_TP2 = PROFILES / "h200x2" / "2026-11-26-tp2"
JETSON = PROFILES / "jetson"
