"""The allowed values of the fields that cross modules, in one place.

Measurements, profiles, the schema and the report all speak these words; a test checks them against the
JSON Schema's enums so the two never drift apart. They are ``str`` enums, so a member compares equal to its
plain string and JSON stays plain strings.
"""

from __future__ import annotations

from enum import Enum


class _Words(str, Enum):
    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:       # a message's {x!r} reads the same whether x came from here or from a file
        return repr(self.value)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)


class Status(_Words):
    """What became of a measurement: the runner's exit code and the profile's lists follow it."""

    OK = "ok"
    SKIPPED = "skipped"        # can't run here (no tensor cores for FP8, no second GPU): the reason says why
    ERROR = "error"            # failed while measuring: the run exits 1, the others' results are kept
    INVALID = "invalid"        # measured, but wrong (failed check, above theory, SASS mismatch): never a ceiling


class Verdict(_Words):
    """A health check's verdict (hwprobe.health): a fail fails the node, a warn is told beside it, and a reading
    the part or driver does not offer is "not available" with its reason, never a failure."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    NOT_AVAILABLE = "not available"


class Kind(_Words):
    COMPUTE = "compute"        # a rate: FLOP/s or OP/s
    MEMORY = "memory"          # a bandwidth, B/s
    LATENCY = "latency"
    CAPACITY = "capacity"
    SWEEP = "sweep"            # one point of a curve (kept in measurements.jsonl, not a ceiling)
    MAP = "map"                # a table over SMs or pairs (stored whole in the profile)
    INFO = "info"              # a finding, skip or error: no value of its own


class ExecUnit(_Words):
    CUDA_CORE = "cuda_core"
    TENSOR_CORE = "tensor_core"
    CPU = "cpu"
    COPY_ENGINE = "copy_engine"


class Path(_Words):
    INSTRUCTION = "instruction"    # hand-written kernels issuing one instruction (FFMA, mma.sync, wgmma)
    LIBRARY = "library"            # cuBLAS, cuBLASLt, cuSPARSELt, framework matmuls


class Precision(_Words):
    FP64 = "fp64"
    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"
    FP8_E4M3 = "fp8_e4m3"
    FP8_E5M2 = "fp8_e5m2"
    INT32 = "int32"
    INT8 = "int8"
    INT4 = "int4"
    INT1 = "int1"


# The precisions a profile's compute section is keyed by (FP8 formats fold into "fp8"), in display order.
PROFILE_PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int32", "int8", "int4", "int1")
CEILING_UNITS = ("FLOP/s", "OP/s", "B/s")
# A compute path key's suffix for a 2:4 structured-sparse ceiling (dense-equivalent rate): "library_sparse24".
SPARSE_SUFFIX = "_sparse24"


def profile_precision(precision: str) -> str:
    """The compute-section key of a measured precision (both FP8 formats are "fp8")."""
    return "fp8" if precision.startswith("fp8") else precision


class Curve(_Words):
    """A calibration curve kind (the 'predict' suite): a field of the profile's ``calibration`` section
    (hwprobe.calibration), where the prediction reads it."""

    GEMM = "gemm"                          # cuBLAS gemmEx seconds over M x N x K, per precision
    GEMM_ALIGN = "gemm_align"              # misaligned over aligned GEMM time, per precision
    MEMORY = "memory"                      # hwprobe's memory-bound kernels, seconds against bytes, per kind
    LAUNCH = "launch"                      # per-kernel floors: graph node, host issue, stream, round trip
    LAUNCH_REPLAY = "launch_replay"        # the fixed cost of one CUDA-graph replay (CuPy)
    FRAMEWORK = "framework"                # the framework's own memory-bound kernels, per kind
    FRAMEWORK_LINEAR = "framework_linear"  # the framework's linear layers over rows x N x K, per precision
    CONV = "conv"                          # the framework's convolutions (every point names its precision)
    SDPA = "sdpa"                          # the framework's fused attention
    FRAMEWORK_REPLAY = "framework_replay"  # the framework's fixed cost of one CUDA-graph replay
    EAGER = "eager"                        # the framework's host time per eagerly issued op
    SWITCH = "switch"                      # a framework kernel's cost of following a different one
    SWITCH_LIBRARY = "switch_library"      # ... of alternating with a library (cuBLAS, cuDNN) kernel
    GROUPED_GEMM = "grouped_gemm"          # the framework's grouped GEMM (MoE experts; every point its precision)
    TP_HOST = "tp_host"                    # transformers' host per kernel under its tp plan, over one GPU's


class StopReason(_Words):
    """Why a stopping rule (hwprobe.timing.policy) stopped taking samples: recorded with every timed figure."""

    NOISE = "noise"                # the noise target was met once the minimum samples and time were taken
    MINIMUMS = "minimums"          # the minimums were taken and the rule has no noise target (a fixed count)
    MAX_SAMPLES = "max_samples"    # the sample cap, noise target not met
    MAX_TIME = "max_time"          # the cap on timed seconds, noise target not met
    TIMEOUT = "timeout"            # the wall-clock limit, whatever else was met


class SettleStop(_Words):
    """Why a sustained point's settle (hwprobe.timing.steady) ended: recorded with the point."""

    FIXED = "fixed"                # a fixed settle, no chunks timed
    STEADY = "steady"              # the last chunks' times per call agreed within the rule's tolerance
    CAP = "cap"                    # the cap on settling seconds, not steady


class WindowStop(_Words):
    """Why a sustained point's timed windows (hwprobe.timing.steady.best_window) ended: recorded with the point."""

    ONE = "one"                    # one window: a fixed settle (no level to compare) or no more allowed
    LEVEL = "level"                # the last window ran at the settle's level, within the rule's tolerance
    CAP = "cap"                    # the cap on windows; the fastest was kept
