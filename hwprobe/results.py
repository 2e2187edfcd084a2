"""A run's directory: measurements appended as they finish, then a tidy table, environment and profile.

measurements.jsonl is flushed and fsynced after every line, so Ctrl-C, kill -9 or a crashing probe loses
nothing measured. Its first line is a header naming the format and its version (like profile.json's
schema_version); files without one are version 1 and load through ``migrate_record``. Everything else in the
directory is written atomically (a temporary file renamed over the target).
"""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwprobe.errors import InputError
from hwprobe.judge import judge_best
from hwprobe.measurement import Measurement

MEASUREMENTS = "measurements.jsonl"
RECORD_FILES = (MEASUREMENTS, MEASUREMENTS + ".gz")    # as a run writes it; gzipped in committed reference runs
TABLE = "measurements.csv"
ENVIRONMENT = "environment.json"
PROFILE = "profile.json"
# measurements.jsonl's format. History: 1 (no header; skips and errors told apart by text prefixes in notes and
# flags), 2 (a header line; every record has a typed ``status`` and ``reason``).
RECORDS_FORMAT = "hwprobe-measurements"
RECORDS_VERSION = 2


def profile_path(p: Path) -> Path:
    """A run directory's profile.json; a file path as given."""
    return p / PROFILE if p.is_dir() else p


def default_root() -> Path:
    return Path(os.environ.get("HWPROBE_RESULTS", "results"))


def new_run_dir(root: Path | str | None, device_label: str) -> Path:
    """Create ``root/<UTC time>-<host>-<device>``; an unwritable root is a one-line input error."""
    root = Path(root) if root is not None else default_root()
    slug = re.sub(r"[^A-Za-z0-9]+", "-", device_label).strip("-").lower()[:40]
    name = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{socket.gethostname().split('.')[0]}-{slug}"
    path = root / name
    try:
        path.mkdir(parents=True, exist_ok=False)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except FileExistsError:
        path = root / f"{name}-{os.getpid()}"
        path.mkdir(parents=True)
    except OSError as e:
        raise InputError(f"cannot write results to {str(root)!r}: {e.strerror or e}") from None
    return path


def _write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd``, then fsync: on disk before the caller goes on."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, fsync it, and rename it over ``path``. A failed write
    (a full disk) leaves ``path`` as it was and no temporary file behind, and raises one OSError."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = text.encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data)
    except OSError:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    tmp.replace(path)


class ResultsWriter:
    """measurements.jsonl, one record per line, each written whole and fsynced before the next. A write that
    fails (the disk filled up) is rolled back to the last complete record, so the file holds every record that
    fit and no torn line; closing never raises (nothing is buffered)."""

    def __init__(self, path: Path):
        self.path = path
        f = path / MEASUREMENTS
        fresh = not f.exists() or f.stat().st_size == 0
        try:
            self._fd: int | None = os.open(f, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if fresh:
                self._line({"format": RECORDS_FORMAT, "version": RECORDS_VERSION})
        except OSError as e:
            raise InputError(f"cannot write results to {str(path)!r}: {e.strerror or e}") from None

    def _line(self, d: dict[str, Any]) -> None:
        if self._fd is None:
            raise OSError(f"{MEASUREMENTS} is closed")
        data = (json.dumps(d, default=_jsonable) + "\n").encode("utf-8")
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            _write_all(self._fd, data)
        except OSError:
            try:
                os.ftruncate(self._fd, start)       # no torn line: the file ends with the last whole record
            except OSError:
                pass
            raise

    def append(self, m: Measurement) -> None:
        self._line(m.to_dict())

    def write_json(self, name: str, data: dict[str, Any]) -> Path:
        p = self.path / name
        atomic_write(p, json.dumps(data, indent=2, default=_jsonable) + "\n")
        return p

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:     # nothing is buffered: every record was written and fsynced, or rolled back
                pass


def write_table(run_dir: Path, measurements: list[Measurement]) -> Path:
    p = run_dir / TABLE
    atomic_write(p, tidy_frame(measurements).to_csv(index=False))
    return p


@dataclass
class Records:
    """What measurements.jsonl held: the records, and what could not be read (a torn last line, say)."""

    measurements: list[Measurement]
    version: int
    skipped_lines: list[str]


def records_file(run_dir: Path) -> Path | None:
    """measurements.jsonl of a results directory, or its gzipped copy (committed reference runs are stored
    compressed), or None when it has neither."""
    for name in RECORD_FILES:
        if (Path(run_dir) / name).is_file():
            return Path(run_dir) / name
    return None


def records_text(run_dir: Path) -> str:
    """The text of measurements.jsonl (or of measurements.jsonl.gz); an unreadable file is refused in one line."""
    import gzip

    f = records_file(run_dir) or Path(run_dir) / MEASUREMENTS
    try:
        raw = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
    except (OSError, EOFError) as e:
        raise InputError(f"cannot read {str(f)!r}: {getattr(e, 'strerror', None) or e}") from None
    return raw.decode("utf-8", errors="replace")


def load_records(run_dir: Path) -> Records:
    """Every complete record of measurements.jsonl (or measurements.jsonl.gz), migrated to the current version.
    A line that is not JSON (the torn last line of a killed run) is skipped and named; a newer format is refused."""
    out: list[Measurement] = []
    bad: list[str] = []
    version = 1
    text = records_text(run_dir)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            if not isinstance(d, dict):
                raise ValueError("not an object")
            if d.get("format") == RECORDS_FORMAT:
                version = int(d.get("version", 1))
                if version > RECORDS_VERSION:
                    raise InputError(f"{MEASUREMENTS} in {str(run_dir)!r} has format version {version}, newer "
                                     f"than this hwprobe understands ({RECORDS_VERSION}): upgrade hwprobe")
                continue
            m = Measurement.from_dict(migrate_record(d) if version < 2 else d)
            judge_best(m)           # a record saved before its best was judged (2026-11-28)
            out.append(m)
        except InputError:
            raise
        except (ValueError, TypeError, KeyError) as e:
            bad.append(f"line {n}: {type(e).__name__}: {str(e)[:80]}")
    return Records(out, version, bad)


def read_measurements(run_dir: Path) -> list[Measurement]:
    """Every complete record of measurements.jsonl (see ``load_records``)."""
    return load_records(run_dir).measurements


def migrate_record(d: dict[str, Any]) -> dict[str, Any]:
    """A version-1 record: status from the text conventions of the time, including the two probes that wrote
    errors otherwise (gpu.fma: flags == ["error"], the text in notes; mma: "error: ..." in notes)."""
    d = dict(d)
    notes, flags = list(d.get("notes") or []), list(d.get("flags") or [])
    errs = [f[len("error: "):] for f in flags if f.startswith("error: ")]
    errs += [n[len("error: "):] for n in notes if n.startswith("error: ")]
    if "error" in flags and not errs:
        errs = [" ".join(notes) or "error"]
    skips = [n[len("skipped: "):] for n in notes if n.startswith("skipped: ")]
    if errs:
        d["status"], d["reason"] = "error", errs[0]
    elif skips or "skipped" in flags:
        d["status"], d["reason"] = "skipped", (skips or [" ".join(notes)])[0]
    elif d.get("valid") is False:
        d["status"], d["reason"] = "invalid", (flags or ["marked invalid"])[0]
    else:
        d.setdefault("status", "ok")
    return d


def tidy_frame(measurements: list[Measurement]):
    """One row per measurement, flat columns: what pandas, spreadsheets and other analyzers read."""
    import pandas as pd

    rows = []
    for m in measurements:
        c, t, s = m.clocks, m.theory, m.stats
        rows.append({
            "probe": m.probe, "metric": m.metric, "kind": m.kind, "precision": m.precision,
            "exec_unit": m.exec_unit, "path": m.path, "level": m.level, "value": m.value, "unit": m.unit,
            "best": m.best, "median_s": s.median_s if s else None, "cv": s.cv if s else None,
            "n": s.n if s else None, "sm_mhz": c.sm_mhz if c else None, "mem_mhz": c.mem_mhz if c else None,
            "power_w": c.power_w if c else None, "temp_c": c.temp_c if c else None,
            "throttle": ";".join(c.throttle_reasons) if c else "",
            "energy_per_unit_j": m.energy_per_op_j,
            "theory_at_clock": t.at_clock if t else None, "theory_at_max_clock": t.at_max_clock if t else None,
            "datasheet": t.datasheet if t else None, "fraction_of_theory": m.fraction_of_theory,
            "verified": m.verified, "valid": m.valid, "status": m.status, "reason": m.reason,
            "flags": ";".join(m.flags), "notes": " | ".join(m.notes),
            "params": json.dumps(m.params, default=_jsonable, sort_keys=True),
        })
    return pd.DataFrame(rows)


def version() -> str:
    """The running hwprobe's version, as a run's environment and profile record it (hwprobe.__version__; read here,
    below the package's lazy exports, so that profile_build does not import the package that exports it)."""
    from hwprobe import __version__

    return __version__


def environment(device: Any, suite_name: str, argv: list[str] | None = None, devices: list | None = None,
                rounds: int = 1) -> dict[str, Any]:
    """What produced these numbers: host, device(s), driver, CUDA and library versions, and who else was using
    the GPU when the run began (their figures may be skewed)."""
    from importlib import metadata

    libs = {}
    for name in ("numpy", "numba", "pandas", "cupy-cuda13x", "cupy-cuda12x", "cupy", "nvidia-ml-py",
                 "nvmath-python", "torch", "nvidia-cublas", "nvidia-cusparselt-cu13", "nvidia-cusparselt-cu12"):
        try:
            libs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    env: dict[str, Any] = {
        "hwprobe_version": version(), "suite": suite_name, "argv": argv or sys.argv,
        "host": socket.gethostname(), "platform": platform.platform(), "python": sys.version.split()[0],
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "libraries": libs,
        "device": device.to_dict(), "rounds": rounds, "host_cpu": _host_cpu(),
    }
    if devices and len(devices) > 1:
        env["devices"] = [d.to_dict() for d in devices]
    if getattr(device, "kind", "") == "gpu":
        env["cuda"] = _cuda_versions()
        env["gpu_sharing"] = _sharing(devices or [device])      # per GPU index
        env["processes"] = env["gpu_sharing"].get(str(getattr(device, "index", 0)), {})   # the primary GPU
    return env


def _host_cpu() -> dict[str, Any]:
    from hwprobe.device.cpu import host_summary

    try:
        return host_summary()
    except Exception as e:  # never fail a run on this
        return {"error": f"{type(e).__name__}: {e}"}


def _sharing(devices: list) -> dict[str, Any]:
    """Other processes on each GPU and its utilization just before the run (NVML; a container may hide them)."""
    from hwprobe.device.nvml import running_processes

    out = {}
    for d in devices:
        try:
            out[str(d.index)] = running_processes(d)
        except Exception as e:  # never fail a run on this
            out[str(d.index)] = {"error": f"{type(e).__name__}: {e}"}
    return out


def _cuda_versions() -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        import cupy as cp

        out["runtime"] = cp.cuda.runtime.runtimeGetVersion()
        out["driver"] = cp.cuda.runtime.driverGetVersion()
        out["cublas"] = cp.cuda.cublas.getVersion(cp.cuda.device.get_cublas_handle())
        out["nvrtc"] = cp.cuda.nvrtc.getVersion()
    except Exception as e:  # versions are nice to have; never fail a run on them
        out["error"] = str(e)
    return out


def _jsonable(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    if isinstance(o, Path):
        return str(o)
    return str(o)
