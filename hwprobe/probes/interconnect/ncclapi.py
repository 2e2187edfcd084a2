"""NCCL for the collective probe: CuPy's ``cupy.cuda.nccl`` where it loads, else a thin ctypes binding over the
same ``libnccl.so.2`` (the ``nvidia-nccl-cu*`` wheel's, or the system's). Both expose one small interface:
unique id, communicators (one per process, or all of a process's GPUs), group calls, the collectives, send/recv.

Safety: hwprobe never turns NVLink SHARP/multicast (NVLS) on for its runs: ``guard_env`` sets NCCL_NVLS_ENABLE=0
before NCCL is first used in a process (NCCL reads its parameters once), unless the user explicitly allows it.
No multicast API is ever called here.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

FLOAT32 = 7            # ncclFloat32
SUM, AVG = 0, 4        # ncclSum, ncclAvg (NCCL >= 2.10)
UNIQUE_ID_BYTES = 128
ALLTOALL_VERSION = 22800   # ncclAlltoAll exists from NCCL 2.28 (nccl-tests calls it from there on)


def guard_env(allow_nvls: bool = False, env: MutableMapping[str, str] | None = None) -> list[str]:
    """Set NCCL_NVLS_ENABLE=0 unless ``allow_nvls``; returns notes saying what was set or kept."""
    env = os.environ if env is None else env
    before = env.get("NCCL_NVLS_ENABLE")
    if allow_nvls:
        return [f"NVLS allowed by the user (allow_nvls): NCCL_NVLS_ENABLE={before!r} left as it was"]
    env["NCCL_NVLS_ENABLE"] = "0"
    if before not in (None, "0"):
        return [f"NCCL_NVLS_ENABLE={before} in the environment overridden to 0: hwprobe never enables NVLink "
                "multicast unless allow_nvls is set"]
    return ["NCCL_NVLS_ENABLE=0 (no NVLink SHARP/multicast)"]


def nccl_env(env: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """The NCCL_* variables in force (recorded with every collective figure)."""
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items()) if k.startswith("NCCL_")}


def wheel_library() -> Path | None:
    """libnccl.so.2 of the nvidia-nccl-cu* wheel, if installed."""
    try:
        import nvidia.nccl as pkg  # namespace package of the wheel
    except ImportError:
        return None
    for base in list(getattr(pkg, "__path__", [])):
        p = Path(base) / "lib" / "libnccl.so.2"
        if p.exists():
            return p
    return None


def _preload() -> str | None:
    """Load the wheel's libnccl globally, so CuPy's NCCL module (linked against libnccl.so.2) finds it."""
    p = wheel_library()
    if p is None:
        return None
    ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL)
    return str(p)


class Engine:
    name = ""
    library = ""

    def version(self) -> int: ...
    def unique_id(self) -> Any: ...
    def comm(self, nranks: int, uid: Any, rank: int): ...
    def comm_all(self, devices: list[int]) -> list: ...
    def group_start(self) -> None: ...
    def group_end(self) -> None: ...

    def has_alltoall(self) -> bool:
        """Whether this NCCL has ncclAlltoAll (>= 2.28 and the symbol exported)."""
        return False

    def version_text(self) -> str:
        v = self.version()
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}" if v >= 10000 else f"{v // 1000}.{v // 100 % 10}.{v % 100}"


def _alltoall(lib, comm_ptr, s, r, n, dt, st) -> None:
    """ncclAlltoAll(sendbuff, recvbuff, count per peer, datatype, comm, stream) through ctypes."""
    res = lib.ncclAlltoAll(ctypes.c_void_p(s), ctypes.c_void_p(r), ctypes.c_size_t(n), dt, comm_ptr,
                           ctypes.c_void_p(st))
    if res != 0:
        lib.ncclGetErrorString.restype = ctypes.c_char_p
        raise NcclError(f"ncclAlltoAll: NCCL error {res}: {lib.ncclGetErrorString(res).decode()}")


def _has_symbol(lib, name: str) -> bool:
    try:
        getattr(lib, name)
        return True
    except AttributeError:
        return False


class _CupyComm:
    def __init__(self, c, lib=None):
        self.c = c
        self.lib = lib     # the same libnccl through ctypes, for calls CuPy does not bind (ncclAlltoAll)

    def alltoall(self, s, r, n, dt, st):
        _alltoall(self.lib, ctypes.c_void_p(self.c.comm), s, r, n, dt, st)

    def all_reduce(self, s, r, n, dt, op, st):
        self.c.allReduce(s, r, n, dt, op, st)

    def all_gather(self, s, r, n, dt, st):
        self.c.allGather(s, r, n, dt, st)

    def reduce_scatter(self, s, r, n, dt, op, st):
        self.c.reduceScatter(s, r, n, dt, op, st)

    def broadcast(self, s, r, n, dt, root, st):
        self.c.broadcast(s, r, n, dt, root, st)

    def reduce(self, s, r, n, dt, op, root, st):
        self.c.reduce(s, r, n, dt, op, root, st)

    def send(self, s, n, dt, peer, st):
        self.c.send(s, n, dt, peer, st)

    def recv(self, r, n, dt, peer, st):
        self.c.recv(r, n, dt, peer, st)

    def destroy(self):
        self.c.destroy()

    def abort(self):
        self.c.abort()


class CupyEngine(Engine):
    name = "cupy.cuda.nccl"

    def __init__(self, mod):
        self.m = mod
        self._lib: Any = False     # not looked up yet

    def version(self) -> int:
        return int(self.m.get_version())

    def lib(self):
        """The libnccl CuPy uses, opened again through ctypes (the same loaded library), or None."""
        if self._lib is False:
            try:
                self._lib = ctypes.CDLL(self.library if self.library.startswith("/") else "libnccl.so.2",
                                        mode=ctypes.RTLD_GLOBAL)
            except OSError:
                self._lib = None
        return self._lib

    def has_alltoall(self) -> bool:
        lib = self.lib()
        return (self.version() >= ALLTOALL_VERSION and lib is not None and _has_symbol(lib, "ncclAlltoAll")
                and hasattr(self.m.NcclCommunicator, "comm"))

    def unique_id(self):
        return self.m.get_unique_id()

    def comm(self, nranks, uid, rank):
        try:
            return _CupyComm(self.m.NcclCommunicator(nranks, uid, rank), self.lib())
        except TypeError:   # CuPy versions differ: a tuple of signed chars, or bytes
            other = bytes(b & 0xFF for b in uid) if isinstance(uid, tuple) else \
                tuple(b - 256 if b > 127 else b for b in uid)
            return _CupyComm(self.m.NcclCommunicator(nranks, other, rank), self.lib())

    def comm_all(self, devices):
        return [_CupyComm(c, self.lib()) for c in self.m.NcclCommunicator.initAll(list(devices))]

    def group_start(self):
        self.m.groupStart()

    def group_end(self):
        self.m.groupEnd()


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class NcclError(RuntimeError):
    pass


class _CtypesComm:
    def __init__(self, eng: CtypesEngine, ptr: ctypes.c_void_p):
        self.e, self.p = eng, ptr

    def all_reduce(self, s, r, n, dt, op, st):
        self.e.call("ncclAllReduce", ctypes.c_void_p(s), ctypes.c_void_p(r), ctypes.c_size_t(n), dt, op, self.p,
                    ctypes.c_void_p(st))

    def all_gather(self, s, r, n, dt, st):
        self.e.call("ncclAllGather", ctypes.c_void_p(s), ctypes.c_void_p(r), ctypes.c_size_t(n), dt, self.p,
                    ctypes.c_void_p(st))

    def reduce_scatter(self, s, r, n, dt, op, st):
        self.e.call("ncclReduceScatter", ctypes.c_void_p(s), ctypes.c_void_p(r), ctypes.c_size_t(n), dt, op, self.p,
                    ctypes.c_void_p(st))

    def broadcast(self, s, r, n, dt, root, st):
        self.e.call("ncclBroadcast", ctypes.c_void_p(s), ctypes.c_void_p(r), ctypes.c_size_t(n), dt, root, self.p,
                    ctypes.c_void_p(st))

    def reduce(self, s, r, n, dt, op, root, st):
        self.e.call("ncclReduce", ctypes.c_void_p(s), ctypes.c_void_p(r), ctypes.c_size_t(n), dt, op, root, self.p,
                    ctypes.c_void_p(st))

    def send(self, s, n, dt, peer, st):
        self.e.call("ncclSend", ctypes.c_void_p(s), ctypes.c_size_t(n), dt, peer, self.p, ctypes.c_void_p(st))

    def recv(self, r, n, dt, peer, st):
        self.e.call("ncclRecv", ctypes.c_void_p(r), ctypes.c_size_t(n), dt, peer, self.p, ctypes.c_void_p(st))

    def alltoall(self, s, r, n, dt, st):
        _alltoall(self.e.lib, self.p, s, r, n, dt, st)

    def destroy(self):
        if self.p:
            self.e.call("ncclCommDestroy", self.p)
            self.p = None

    def abort(self):
        if self.p:
            self.e.call("ncclCommAbort", self.p)
            self.p = None


class CtypesEngine(Engine):
    name = "ctypes"

    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        self.library = path
        self.lib.ncclGetErrorString.restype = ctypes.c_char_p

    def call(self, fn: str, *args) -> None:
        res = getattr(self.lib, fn)(*args)
        if res != 0:
            raise NcclError(f"{fn}: NCCL error {res}: {self.lib.ncclGetErrorString(res).decode()}")

    def version(self) -> int:
        v = ctypes.c_int()
        self.call("ncclGetVersion", ctypes.byref(v))
        return v.value

    def unique_id(self) -> bytes:
        uid = _UniqueId()
        self.call("ncclGetUniqueId", ctypes.byref(uid))
        return ctypes.string_at(ctypes.addressof(uid), UNIQUE_ID_BYTES)

    def comm(self, nranks, uid, rank):
        raw = bytes(uid) if not isinstance(uid, tuple) else bytes(b & 0xFF for b in uid)
        p = ctypes.c_void_p()
        self.call("ncclCommInitRank", ctypes.byref(p), nranks, _UniqueId.from_buffer_copy(raw), rank)
        return _CtypesComm(self, p)

    def comm_all(self, devices):
        n = len(devices)
        arr = (ctypes.c_void_p * n)()
        devs = (ctypes.c_int * n)(*devices)
        self.call("ncclCommInitAll", arr, n, devs)
        return [_CtypesComm(self, ctypes.c_void_p(arr[i])) for i in range(n)]

    def has_alltoall(self) -> bool:
        return self.version() >= ALLTOALL_VERSION and _has_symbol(self.lib, "ncclAlltoAll")

    def group_start(self):
        self.call("ncclGroupStart")

    def group_end(self):
        self.call("ncclGroupEnd")


def load(prefer: str = "auto") -> Engine:
    """CuPy's NCCL where it loads (``prefer`` "cupy"/"auto"), else ctypes over libnccl.so.2; raises
    hwprobe.errors.Skip naming what was tried when neither loads."""
    from hwprobe.errors import Skip

    tried = []
    try:
        wheel = _preload()
    except OSError as e:
        wheel = None
        tried.append(f"preloading the wheel's libnccl: {e}")
    if prefer in ("auto", "cupy"):
        try:
            import importlib

            import cupy.cuda.nccl as m

            if not getattr(m, "available", False):
                m = importlib.reload(m)
            if getattr(m, "available", False):
                eng = CupyEngine(m)
                eng.library = wheel or "libnccl.so.2 (as CuPy found it)"
                return eng
            tried.append("cupy.cuda.nccl: NCCL not available to CuPy")
        except Exception as e:
            tried.append(f"cupy.cuda.nccl: {type(e).__name__}: {e}")
    for path in [p for p in (wheel, "libnccl.so.2") if p]:
        try:
            return CtypesEngine(path)
        except OSError as e:
            tried.append(f"ctypes {path}: {e}")
    raise Skip("NCCL not found (pip install nvidia-nccl-cu12/-cu13, or CuPy with NCCL): " + "; ".join(tried))


def load_on_every_rank(comm, prefer: str = "auto") -> Engine:
    """``load`` on every rank of ``comm``; where any rank cannot, every rank raises Skip with each failing rank's
    reason (a rank that went on alone would wait forever in a collective the others never enter)."""
    from hwprobe import distributed
    from hwprobe.errors import Skip

    eng, why = None, ""
    try:
        eng = load(prefer)
    except Skip as e:
        why = str(e)
    ok, reasons = distributed.agree(comm, eng is not None, why)
    if not ok or eng is None:
        raise Skip("NCCL is not usable on every rank: " + "; ".join(reasons))
    return eng
