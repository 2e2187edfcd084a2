"""CUDA C sources (.cu beside this file), compiled with NVRTC through CuPy for the device's arch.

CuPy caches compiled modules on disk (~/.cupy/kernel_cache), so a second run skips NVRTC.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from importlib import resources
from typing import Any


def source(name: str) -> str:
    """A kernel file's text with its local `#include "x.cuh"` lines inlined (NVRTC needs no include path)."""
    text = resources.files(__package__).joinpath(name).read_text()
    return re.sub(r'^#include "([\w.]+\.cuh)"$', lambda m: source(m.group(1)).replace("#pragma once", ""),
                  text, flags=re.M)


def arch_flag(cc_major: int, cc_minor: int, *, arch_specific: bool = False) -> str:
    """``-arch=sm_XY``; ``arch_specific`` asks for sm_90a-style targets (wgmma, setmaxnreg)."""
    suffix = "a" if arch_specific and cc_major >= 9 else ""
    return f"-arch=sm_{cc_major}{cc_minor}{suffix}"


# Compiling ahead (issue 33): NVRTC compiles of the suite's large modules cost a cold run 45 s on an H200, one after
# another. A probe names what it will compile (``@probe(ahead=...)``: ``prefetch`` its modules, ``ahead`` its SASS
# cubins); the runner calls those hooks at the start, and a few threads compile while the first probes measure
# (NVRTC runs with the GIL released, in CuPy and in cuda-python). ``load`` returns the compiled module, waiting for
# a compile already under way; one compile per key.
Key = tuple   # (name, options, name_expressions, arch_specific) of ``load``, or any key of ``once``
_LOCK = threading.Lock()
_DONE: dict[Key, Future] = {}
_QUEUE: queue.Queue = queue.Queue()
_WORKERS: list[threading.Thread] = []
WORKERS = 4
_STALLED = [0.0]     # seconds callers of ``once`` spent compiling or waiting for a compile (waited_seconds)


def _claim(fut: Future) -> bool:
    """Take on a key's work (under _LOCK): True where nobody has (its Future still pending, i.e. queued)."""
    return not (fut.running() or fut.done()) and fut.set_running_or_notify_cancel()


def _run(key: Key, fut: Future, make: Callable[[], Any]) -> None:
    try:
        fut.set_result(make())
    except BaseException as e:
        fut.set_exception(e)
        with _LOCK:                  # forgotten, so a later call tries again
            if _DONE.get(key) is fut:
                del _DONE[key]


def once(key: Key, make: Callable[[], Any]) -> Any:
    """``make()``'s result, computed once per ``key``: by this call, by a ``prefetch``/``ahead`` already under way
    (waited for), or here where one is still queued. A failure is raised to every waiter and forgotten, so a later
    call tries again."""
    with _LOCK:
        fut = _DONE.get(key)
        if fut is None:
            fut = _DONE[key] = Future()
        mine = _claim(fut)
    if fut.done():
        return fut.result()
    t0 = time.perf_counter()
    try:
        if mine:
            _run(key, fut, make)
        return fut.result()
    finally:
        with _LOCK:
            _STALLED[0] += time.perf_counter() - t0


def waited_seconds() -> float:
    """Seconds the callers of ``once`` (the probes' ``load``) have spent so far compiling, or waiting for a compile
    under way ahead: the runner records each probe's share (environment ``compile_wait_seconds``), the part of its
    wall time no measurement used."""
    with _LOCK:
        return _STALLED[0]


def ahead(key: Key, make: Callable[[], Any]) -> None:
    """Queue ``once(key, make)`` for a worker thread (no-op when the key is done, under way or queued), in the
    order asked. The workers are daemon threads: Ctrl-C or the end of a run never waits for a compile nobody needs
    any more."""
    with _LOCK:
        if key in _DONE:
            return
        _DONE[key] = Future()
        if not _WORKERS:
            _WORKERS.extend(threading.Thread(target=_work, name=f"hwprobe-compile-{i}", daemon=True)
                            for i in range(WORKERS))
            for t in _WORKERS:
                t.start()
    _QUEUE.put((key, make))


def _work() -> None:
    while True:
        key, make = _QUEUE.get()
        with _LOCK:
            fut = _DONE.get(key)
            if fut is None or not _claim(fut):     # done already by a load that did not wait for the queue
                continue
        _run(key, fut, make)    # a failure: the probe that loads it compiles again and reports it where it measures


def prefetch(specs: list[Key]) -> None:
    """Compile ``load``'s modules ahead, each given as ``load``'s positional arguments (name, then optionally
    options, name_expressions, arch_specific), for the current device (the worker threads use the caller's)."""
    import cupy as cp

    dev = cp.cuda.Device().id
    for spec in specs:
        key = _key(*spec, dev=dev)

        def make(key=key):
            with cp.cuda.Device(dev):
                return _compile(*key[:4])

        ahead(key, make)


def compile_ahead(*modules) -> Callable[[Any], None]:
    """A probe's ``ahead`` hook (``@probe(ahead=...)``) that ``prefetch``es ``modules``: each ``load``'s positional
    arguments, or a callable giving them (called when the run begins)."""
    def hook(dev) -> None:
        prefetch([m() if callable(m) else m for m in modules])
    return hook


def _key(name: str, options: tuple[str, ...] = (), name_expressions: tuple[str, ...] | None = None,
         arch_specific: bool = False, *, dev: int) -> Key:
    """One compile's identity: ``load``'s arguments, normalized (lists as tuples), and the device."""
    return (name, tuple(options), tuple(name_expressions) if name_expressions is not None else None,
            bool(arch_specific), dev)


def load(name: str, options: tuple[str, ...] = (), name_expressions: tuple[str, ...] | None = None,
         arch_specific: bool = False):
    """Compile ``name`` (a .cu file here) for the current device and return the cupy.RawModule (once per
    arguments and device; a compile under way from ``prefetch`` is waited for)."""
    import cupy as cp

    key = _key(name, options, name_expressions, arch_specific, dev=cp.cuda.Device().id)
    return once(key, lambda: _compile(*key[:4]))


def _compile(name: str, options: tuple[str, ...], name_expressions: tuple[str, ...] | None, arch_specific: bool):
    import cupy as cp

    dev = cp.cuda.Device()
    major, minor = (int(x) for x in dev.compute_capability)
    opts = (arch_flag(major, minor, arch_specific=arch_specific), "-std=c++17", *options)
    mod = cp.RawModule(code=source(name), options=opts, name_expressions=name_expressions)
    mod.compile()
    return mod
