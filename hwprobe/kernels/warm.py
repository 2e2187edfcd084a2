"""CuPy's own kernels compiled in worker processes before the first probe (issue 33).

CuPy JIT-compiles each elementwise, reduction and indexing kernel (the probes' operand fills, dtype conversions
and output checks) on first use: 17 s of NVRTC on the main thread of a cold `full` run on an H200, one compile
after another. CuPy cannot compile such a kernel without launching it, and threads do not parallelize its
compile path. Worker processes can: each runs some of the probes' own operand and check code on tiny problems,
and CuPy writes what it compiles to its on-disk cache (the kernel's source, options and arch are the key, the
problem size is not), where the main process finds it. The workers run before any probe, so their launches
time nothing; the run waits for them.

A probe names its tasks with ``@probe(warm=(Warm(fn, arg...), ...))``: ``fn`` a module-level function of
JSON-able arguments that makes the current CUDA device compile what the probe will. A task that fails costs
only its saving: the probe compiles on its own thread as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

WORKERS = 8               # processes at most (each holds a CUDA context, ~0.5 GB of device memory)
TIMEOUT_S = 120.0         # a worker still compiling then is stopped; its probes compile on their own
MARKER_PREFIX = "hwprobe-warm-"


@dataclass(frozen=True)
class Warm:
    """One warm-up task: ``fn(*args)`` in a worker process (``fn`` importable by module and name)."""

    fn: Callable[..., None]
    args: tuple = ()

    def __init__(self, fn: Callable[..., None], *args):
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "args", tuple(args))

    @property
    def spec(self) -> str:
        """``module:function`` and the JSON arguments: what a worker process imports and calls."""
        return f"{self.fn.__module__}:{self.fn.__qualname__}:{json.dumps(list(self.args))}"


def parse(spec: str) -> tuple[Callable[..., None], list]:
    module, name, args = spec.split(":", 2)
    fn: object = import_module(module)
    for part in name.split("."):
        fn = getattr(fn, part)
    return fn, json.loads(args)  # type: ignore[return-value]


def cache_dir() -> Path:
    """CuPy's kernel cache as its documentation gives it: CUPY_CACHE_DIR, else ~/.cupy/kernel_cache (CuPy 13 has
    no public getter)."""
    return Path(os.environ.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache"))


def cache_files(path: Path) -> int:
    """Compiled modules in CuPy's cache (0 where it does not exist yet)."""
    try:
        return sum(1 for e in os.scandir(path) if e.is_file() and e.name.endswith(".cubin"))
    except OSError:
        return 0


def marker(specs: list[str], arch: str) -> str:
    """The cache marker of a warm-up that completed for these tasks, this arch and these library versions: a
    second run on the box finds it and starts no worker."""
    import cupy as cp

    ident = json.dumps([sorted(specs), arch, cp.__version__, cp.cuda.runtime.runtimeGetVersion()])
    return MARKER_PREFIX + hashlib.sha256(ident.encode()).hexdigest()[:16]


def split(specs: list[str], workers: int) -> list[list[str]]:
    """Round-robin shares, in the order given (callers list the costliest first)."""
    return [s for s in (specs[i::workers] for i in range(workers)) if s]


def run(tasks: Iterable[Warm], device_index: int | None, arch: str, log: Callable[[str], None] = print,
        workers: int = WORKERS, timeout_s: float = TIMEOUT_S, cache: Path | None = None) -> dict:
    """Run the tasks in worker processes on ``device_index`` and wait for them: a summary for the run's
    environment (seconds, tasks, failures, cache files before and after). ``device_index`` None: workers make
    no CUDA context (tests of the mechanics); ``cache``: CuPy's cache directory unless given."""
    specs = list(dict.fromkeys(t.spec for t in tasks))
    if not specs:
        return {"skipped": "no probe of the suite names a warm-up"}
    cache = cache or cache_dir()
    mark = cache / (marker(specs, arch) if device_index is not None else MARKER_PREFIX + "test")
    before = cache_files(cache)
    if mark.exists():
        return {"skipped": f"done before for this suite and arch ({mark.name} in {cache})", "cache_files": before}
    t0 = time.perf_counter()
    env = dict(os.environ)
    env.pop("HWPROBE_WARM_DEVICE", None)
    if device_index is not None:
        env["HWPROBE_WARM_DEVICE"] = str(device_index)
    procs = [subprocess.Popen([sys.executable, "-m", __name__, *share], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for share in split(specs, max(1, min(workers, len(specs), (os.cpu_count() or 2) // 2)))]
    failures: list[str] = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1.0, timeout_s - (time.perf_counter() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            failures.append(f"a worker ran past {timeout_s:g} s and was stopped")
        failures += _failures(out, err, p.returncode)
    seconds = round(time.perf_counter() - t0, 2)
    summary = {"seconds": seconds, "tasks": len(specs), "workers": len(procs), "cache_files_before": before,
               "cache_files_after": cache_files(cache), "cache_dir": str(cache), "finished_at": time.time()}
    if failures:
        summary["failures"] = failures
        log(f"CuPy warm-up: {len(failures)} of {len(specs)} tasks failed (their probes compile on their own): "
            f"{failures[0]}")
    else:
        try:
            cache.mkdir(parents=True, exist_ok=True)
            mark.touch()
        except OSError:
            pass
    return summary


def _failures(out: str, err: str, code: int | None) -> list[str]:
    try:
        return list(json.loads(out.strip().splitlines()[-1])["failures"])
    except (IndexError, ValueError, KeyError, TypeError):
        tail = (err or out or "").strip().splitlines()[-1:] or ["no output"]
        return [f"a worker exited {code}: {tail[0]}"]


def main(specs: list[str]) -> dict:
    """A worker: each task on the device HWPROBE_WARM_DEVICE names (none: no CUDA context); failures reported,
    not raised."""
    device = os.environ.get("HWPROBE_WARM_DEVICE")
    cp = None
    if device is not None:
        import cupy as cp

        cp.cuda.Device(int(device)).use()
    failures, seconds = [], {}
    for spec in specs:
        t0 = time.perf_counter()
        try:
            fn, args = parse(spec)
            fn(*args)
            if cp is not None:
                cp.cuda.get_current_stream().synchronize()
        except Exception as e:
            failures.append(f"{spec}: {type(e).__name__}: {e}"[:300])
        seconds[spec] = round(time.perf_counter() - t0, 3)
    return {"failures": failures, "seconds": seconds}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
