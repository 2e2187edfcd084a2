"""GPU helpers the interconnect probes share: p2p.cu's kernels, the fill/check of buffers, peer access. The timing
of several transfers on several GPUs at once lives in hwprobe.timing.groups (re-exported here)."""

from __future__ import annotations

import numpy as np

from hwprobe.timing.groups import Group, Transfer, time_groups  # noqa: F401 (the probes' names for them)

COPY_UNROLLS = (1, 2, 4, 8)
KERNEL_NAMES = tuple(f"p2p_copy<{u}>" for u in COPY_UNROLLS)
CHECK_BLOCK = 256
CHECK_GRID = 1024
PEER_ACCESS_ALREADY_ENABLED = 704          # cudaErrorPeerAccessAlreadyEnabled


def module():
    """p2p.cu compiled for the current device (CuPy loads it into each device's context as it is used)."""
    from hwprobe.kernels import load

    return load("p2p.cu", name_expressions=KERNEL_NAMES)


def kernel(name: str):
    return module().get_function(name)


def seed(device: int) -> int:
    """The pattern seed of buffers written by GPU ``device`` (distinct per GPU, so a copy from the wrong GPU shows)."""
    return (0x9E3779B9 * (device + 1) + 0x7F4A7C15) & 0xFFFFFFFF


def pattern_host(device: int, idx: np.ndarray) -> np.ndarray:
    """The words pattern_fill writes (numpy; for tests and spot checks)."""
    return ((np.asarray(idx, np.uint64) * np.uint64(2654435761) + np.uint64(seed(device))) & 0xFFFFFFFF).astype(
        np.uint32)


def _launch(name: str, args: tuple) -> None:
    kernel(name)((CHECK_GRID,), (CHECK_BLOCK,), args)


def fill_pattern(buf, words: int, device: int) -> None:
    """buf (uint32, on the current device)[:words] = the pattern of GPU ``device``."""
    _launch("pattern_fill", (buf, np.uint64(words), np.uint32(seed(device))))


def pattern_wrong(buf, words: int, device: int) -> int:
    """Words of buf[:words] that differ from GPU ``device``'s pattern (counted on the current device)."""
    import cupy as cp

    wrong = cp.zeros(1, dtype=cp.uint64)
    _launch("pattern_check", (buf, np.uint64(words), np.uint32(seed(device)), wrong))
    return int(wrong.get()[0])


def coll_fill(buf, n: int, rank: int) -> None:
    _launch("coll_fill", (buf, np.uint64(n), np.int64(rank)))


def fill_value(buf, n: int, value: float) -> None:
    _launch("fill_f32", (buf, np.uint64(n), np.float32(value)))


def coll_wrong(buf, n: int, op_code: int, rank: int, nranks: int, count: int, avg: bool) -> tuple[int, int | None]:
    """(wrong elements, first wrong index) of a collective's receive buffer, on the current device."""
    import cupy as cp

    out = cp.array([0, np.iinfo(np.uint64).max], dtype=cp.uint64)
    _launch("coll_check", (buf, np.uint64(n), np.int32(op_code), np.int64(rank), np.int64(nranks),
                           np.int64(max(count, 1)), np.int32(1 if avg else 0), out))
    wrong, first = (int(x) for x in out.get())
    return wrong, (first if wrong else None)


def enable_peer_access(a: int, b: int) -> bool:
    """Map GPU b's memory into GPU a (cudaDeviceEnablePeerAccess); True when a can access b."""
    import cupy as cp

    rt = cp.cuda.runtime
    if a == b:
        return True
    if not rt.deviceCanAccessPeer(a, b):
        return False
    with cp.cuda.Device(a):
        try:
            rt.deviceEnablePeerAccess(b)
        except rt.CUDARuntimeError as e:
            if getattr(e, "status", None) != PEER_ACCESS_ALREADY_ENABLED:
                raise
    return True
