"""The thin NVML layer of the health checks: named calls in, readings out. READS only.

Every call goes through an ``Nvml`` answerer: ``LiveNvml`` asks nvidia-ml-py (pynvml) for one GPU, ``Recorded``
replays a recording (what ``record`` writes: tests/data/nvml/*.json), so the checks run on CPU from real answers.
A call NVML refuses is ``Unavailable`` with the reason (NotSupported on this part, no permission, a driver or
nvidia-ml-py without the function), never an exception, and never a failed verdict.

XIDs: ``XidWatch`` registers an event set for nvmlEventTypeXidCriticalError on the GPU at the start of a run and
drains it at the end (nvmlEventSetWait_v2 with a 0 ms timeout until NVML says Timeout).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hwprobe.health.readings import (
    Ecc,
    GpuReadings,
    NvLink,
    Pcie,
    Power,
    RetiredPages,
    RowRemap,
    Throttle,
    Unavailable,
    Xid,
)

# nvml.h constants (pynvml names in the comments), fixed by the C API: recordings stay readable without pynvml.
VOLATILE, AGGREGATE = 0, 1                 # NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC
CORRECTED, UNCORRECTED = 0, 1              # NVML_MEMORY_ERROR_TYPE_CORRECTED/UNCORRECTED
RETIRE_SBE, RETIRE_DBE = 0, 1              # NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS/DOUBLE_BIT
NVLINK_MAX_LINKS = 18                      # NVML_NVLINK_MAX_LINKS is 18 up to Hopper (36 in newer headers)
NVLINK_ERRORS = {"replay": 0, "recovery": 1, "crc_flit": 2, "crc_data": 3}   # NVML_NVLINK_ERROR_DL_*
XID_CRITICAL = 0x8                         # nvmlEventTypeXidCriticalError
# NVML return codes -> the reason told (NVML_ERROR_*)
REASONS = {2: "invalid argument (no such link or counter on this part)", 3: "not supported on this part",
           4: "needs more permission (root)", 6: "not found", 10: "timeout", 13: "the driver has no such function",
           15: "the GPU is lost (fallen off the bus?)", 999: "unknown NVML error"}


class NvmlRefused(Exception):
    """An NVML call that returned an error: ``code`` is NVML's return code."""

    def __init__(self, code: int, text: str = ""):
        super().__init__(text or REASONS.get(code, f"NVML error {code}"))
        self.code, self.text = code, text

    @property
    def reason(self) -> str:
        """What the caller was told in words: the explicit text, else NVML's code in hwprobe's words."""
        return self.text or REASONS.get(self.code, str(self))


Nvml = Callable[..., Any]        # answer(name, *args) -> plain value, or raise NvmlRefused


def _plain(v: Any) -> Any:
    """A pynvml answer as JSON would hold it: bytes -> str, ctypes structures -> dicts, tuples -> lists."""
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    fields = getattr(v, "_fields_", None)
    if fields:
        return {f[0]: _plain(getattr(v, f[0])) for f in fields}
    return v


class LiveNvml:
    """Answers from nvidia-ml-py for one GPU handle (``pynvml`` injected: the module, or a fake of it)."""

    def __init__(self, pynvml, handle):
        self.n, self.h = pynvml, handle

    def __call__(self, name: str, *args) -> Any:
        fn = getattr(self.n, name, None)
        if fn is None:
            raise NvmlRefused(13, f"nvidia-ml-py has no {name} (upgrade nvidia-ml-py)")
        try:
            return _plain(fn(self.h, *args))
        except self.n.NVMLError as e:
            code = int(getattr(e, "value", 999))
            raise NvmlRefused(code, "" if code in REASONS else str(e)) from None


def _key(name: str, args: tuple) -> str:
    return f"{name}({','.join(map(str, args))})"


class Recorder:
    """Wraps an answerer and keeps every answer (or refusal) under its call: what ``Recorded`` replays. A call
    asked again with another answer (the PCIe generation idle, then under load) keeps them all, in order."""

    def __init__(self, inner: Nvml):
        self.inner, self.calls = inner, {}

    def _keep(self, k: str, v: Any) -> None:
        if k not in self.calls:
            self.calls[k] = v
            return
        have = self.calls[k]
        seq = have["answers"] if isinstance(have, dict) and "answers" in have else [have]
        if v != seq[-1]:
            self.calls[k] = {"answers": [*seq, v]}

    def __call__(self, name: str, *args) -> Any:
        try:
            v = self.inner(name, *args)
        except NvmlRefused as e:
            self._keep(_key(name, args), {"error": e.code})
            raise
        self._keep(_key(name, args), v)
        return v

    def to_json(self, about: str) -> str:
        return json.dumps({"about": about, "calls": self.calls}, indent=1, sort_keys=True) + "\n"


class Recorded:
    """Replays recorded answers. A call the recording lacks is refused as NotSupported (as NVML answers a part
    without the feature), and listed in ``missing`` so a test can tell a gap from an answer. A call recorded with
    several answers gives them in order (the last one from then on)."""

    def __init__(self, calls: dict[str, Any]):
        self.calls, self.missing = dict(calls), []
        self.asked: dict[str, int] = {}

    @classmethod
    def load(cls, path: str | Path, **changes: Any) -> Recorded:
        """A recording file, with some answers replaced (an unhealthy state made from a healthy recording)."""
        d = json.loads(Path(path).read_text())
        return cls({**d["calls"], **changes})

    def __call__(self, name: str, *args) -> Any:
        k = _key(name, args)
        if k not in self.calls:
            self.missing.append(k)
            raise NvmlRefused(3)
        v = self.calls[k]
        if isinstance(v, dict) and "answers" in v:
            i = self.asked[k] = self.asked.get(k, -1) + 1
            v = v["answers"][min(i, len(v["answers"]) - 1)]
        if isinstance(v, dict) and set(v) == {"error"}:
            raise NvmlRefused(int(v["error"]))
        return v


def _get(nv: Nvml, name: str, *args) -> Any:
    try:
        return nv(name, *args)
    except NvmlRefused as e:
        return Unavailable(f"{name}: {e.reason}")


def _ok(*vals) -> bool:
    return not any(isinstance(v, Unavailable) for v in vals)


def _int(v) -> int | None:
    return None if isinstance(v, Unavailable) or v is None else int(v)


def read_ecc(nv: Nvml) -> Ecc | Unavailable:
    mode = _get(nv, "nvmlDeviceGetEccMode")
    if isinstance(mode, Unavailable):
        return mode
    counts = {f"{life}_{kind}": _int(_get(nv, "nvmlDeviceGetTotalEccErrors", et, ct))
              for life, ct in (("volatile", VOLATILE), ("aggregate", AGGREGATE))
              for kind, et in (("corrected", CORRECTED), ("uncorrected", UNCORRECTED))}
    return Ecc(enabled=bool(mode[0]), **counts)


def read_row_remap(nv: Nvml) -> RowRemap | Unavailable:
    v = _get(nv, "nvmlDeviceGetRemappedRows")
    if isinstance(v, Unavailable):
        return v
    corr, unc, pending, failure = v
    return RowRemap(int(corr), int(unc), bool(pending), bool(failure))


def read_retired_pages(nv: Nvml) -> RetiredPages | Unavailable:
    sbe = _get(nv, "nvmlDeviceGetRetiredPages", RETIRE_SBE)
    dbe = _get(nv, "nvmlDeviceGetRetiredPages", RETIRE_DBE)
    if not _ok(sbe, dbe):
        return sbe if isinstance(sbe, Unavailable) else dbe
    pending = _get(nv, "nvmlDeviceGetRetiredPagesPendingStatus")
    return RetiredPages(len(sbe), len(dbe), None if isinstance(pending, Unavailable) else bool(pending))


def read_pcie(nv: Nvml, load: Callable[[Callable[[], None]], None] | None = None) -> Pcie | Unavailable:
    """The link now and its maxima; where the generation is below the max, read again during ``load`` (a host
    copy the caller runs while calling the reader it is given)."""
    now = _get(nv, "nvmlDeviceGetCurrPcieLinkGeneration")
    if isinstance(now, Unavailable):
        return now
    p = Pcie(gen_now=_int(now), width_now=_int(_get(nv, "nvmlDeviceGetCurrPcieLinkWidth")),
             gen_max=_int(_get(nv, "nvmlDeviceGetMaxPcieLinkGeneration")),
             width_max=_int(_get(nv, "nvmlDeviceGetMaxPcieLinkWidth")),
             gen_gpu_max=_int(_get(nv, "nvmlDeviceGetGpuMaxPcieLinkGeneration")),
             replays=_int(_get(nv, "nvmlDeviceGetPcieReplayCounter")))
    if load is not None and p.gen_max and p.gen_now is not None and p.gen_now < p.gen_max:
        seen: list[tuple[int | None, int | None]] = []

        def sample() -> None:
            seen.append((_int(_get(nv, "nvmlDeviceGetCurrPcieLinkGeneration")),
                         _int(_get(nv, "nvmlDeviceGetCurrPcieLinkWidth"))))

        load(sample)
        gens = [g for g, _ in seen if g is not None]
        widths = [w for _, w in seen if w is not None]
        p.gen_under_load = max(gens) if gens else None
        p.width_under_load = max(widths) if widths else None
    return p


def read_nvlinks(nv: Nvml, max_links: int = NVLINK_MAX_LINKS) -> list[NvLink] | Unavailable:
    """Every link NVML knows on this GPU (a link it refuses with NotSupported or InvalidArgument does not exist)."""
    out, first = [], None
    for link in range(max_links):
        state = _get(nv, "nvmlDeviceGetNvLinkState", link)
        if isinstance(state, Unavailable):
            first = first or state
            continue
        errors = {}
        if state:
            for name, code in NVLINK_ERRORS.items():
                v = _get(nv, "nvmlDeviceGetNvLinkErrorCounter", link, code)
                if not isinstance(v, Unavailable):
                    errors[name] = int(v)
        out.append(NvLink(link, bool(state), errors))
    if not out and first is not None and "not supported" not in first.reason and "invalid" not in first.reason:
        return first                       # refused for another reason (permission, a lost GPU): say which
    return out


def read_throttle(nv: Nvml) -> Throttle | Unavailable:
    mask = _get(nv, "nvmlDeviceGetCurrentClocksEventReasons")
    if isinstance(mask, Unavailable):                 # drivers before 535 name it ...ThrottleReasons
        mask = _get(nv, "nvmlDeviceGetCurrentClocksThrottleReasons")
    if isinstance(mask, Unavailable):
        return mask
    util = _get(nv, "nvmlDeviceGetUtilizationRates")
    return Throttle(int(mask), None if isinstance(util, Unavailable) else int(util["gpu"]))


def read_power(nv: Nvml) -> Power | Unavailable:
    limit = _get(nv, "nvmlDeviceGetPowerManagementLimit")
    default = _get(nv, "nvmlDeviceGetPowerManagementDefaultLimit")
    if isinstance(default, Unavailable):
        return default
    enforced = _get(nv, "nvmlDeviceGetEnforcedPowerLimit")

    def watts(v):
        return None if isinstance(v, Unavailable) else float(v) / 1000.0

    return Power(watts(limit), watts(default), watts(enforced))


def read_gpu(nv: Nvml, device: str = "GPU", load=None, nvlink_max: int = NVLINK_MAX_LINKS) -> GpuReadings:
    """Every health reading of one GPU but the XIDs (those need a watch over the run: ``XidWatch``)."""
    return GpuReadings(device=device, ecc=read_ecc(nv), row_remap=read_row_remap(nv),
                       retired_pages=read_retired_pages(nv), pcie=read_pcie(nv, load),
                       nvlinks=read_nvlinks(nv, nvlink_max), throttle=read_throttle(nv), power=read_power(nv),
                       xid=Unavailable("not watched"))


class XidWatch:
    """An NVML event set for XID events on one GPU, from ``start`` to ``drain``. ``pynvml`` injected."""

    def __init__(self, pynvml, handle, clock=time.monotonic):
        self.n, self.h, self.clock = pynvml, handle, clock
        self.set = None
        self.t0 = 0.0
        self.why = ""

    def start(self) -> bool:
        n = self.n
        try:
            supported = int(n.nvmlDeviceGetSupportedEventTypes(self.h))
            if not supported & XID_CRITICAL:
                self.why = "this GPU does not report XID events to NVML"
                return False
            self.set = n.nvmlEventSetCreate()
            n.nvmlDeviceRegisterEvents(self.h, XID_CRITICAL, self.set)
        except AttributeError as e:
            self.why = f"nvidia-ml-py lacks an event call: {e}"
            return False
        except n.NVMLError as e:
            self.why = f"NVML event set: {REASONS.get(int(getattr(e, 'value', 999)), e)}"
            self._free()
            return False
        self.t0 = self.clock()
        return True

    def drain(self, limit: int = 1000) -> Xid | Unavailable:
        """Every XID delivered since ``start`` (and frees the set)."""
        if self.set is None:
            return Unavailable(self.why or "XID watch not started")
        n, events = self.n, []
        try:
            for _ in range(limit):
                try:
                    data = n.nvmlEventSetWait_v2(self.set, 0)
                except n.NVMLError as e:
                    if int(getattr(e, "value", 0)) == 10:       # NVML_ERROR_TIMEOUT: nothing more queued
                        break
                    raise
                if int(data.eventType) & XID_CRITICAL:
                    events.append(int(data.eventData))
        except n.NVMLError as e:
            return Unavailable(f"nvmlEventSetWait_v2: {REASONS.get(int(getattr(e, 'value', 999)), e)}")
        finally:
            watched = self.clock() - self.t0
            self._free()
        return Xid(events, round(watched, 1))

    def _free(self) -> None:
        if self.set is not None:
            try:
                self.n.nvmlEventSetFree(self.set)
            except Exception:       # freeing is best effort: the process ends soon after
                pass
            self.set = None
