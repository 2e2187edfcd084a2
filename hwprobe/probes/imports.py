"""Heavy Python imports started early on a daemon thread, so that a probe meets them loaded.

Importing PyTorch takes seconds of Python (3.1-4.8 s on an H200's host, timed in the conv workers), and a probe that
imports it mid-sweep pays that inside its own wall: gpu.gemm's first nvmath Matmul (FP16 cuBLASLt at 16384, where
``cublaslt.lt_env`` imports PyTorch and nvmath's linalg) ran 3.5-4.4 s beyond its samples in the forty-fourth
session's runs, against a median of 0.05 s a point. Started with the run's kernel compiles (a probe's ``ahead``
hook), the import runs while the first probes' kernels do; the probe's own ``import`` then finds the modules loaded,
or waits on the import lock for the rest. Nothing is imported that is not installed, and a failure is left for the
probe's own import to report where it measures.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading


def import_ahead(*modules: str, touch: tuple[str, ...] = ()) -> threading.Thread | None:
    """Import ``modules`` in order on a daemon thread (None where the first is not installed), then read ``touch``'s
    attributes of the first (a package that loads its names lazily, as transformers does, imports them then)."""
    try:
        if importlib.util.find_spec(modules[0].split(".")[0]) is None:
            return None
    except (ImportError, ValueError):
        return None

    def load() -> None:
        try:
            first = importlib.import_module(modules[0])
            for name in touch:
                getattr(first, name)
            for name in modules[1:]:
                importlib.import_module(name)
        except Exception:               # the probe's own import reports it
            pass

    thread = threading.Thread(target=load, name=f"hwprobe-import-{modules[0]}", daemon=True)
    thread.start()
    return thread
