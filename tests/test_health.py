"""Health verdicts from recorded NVML answers (hwprobe.health): the healthy recording passes every check, and each
unhealthy state (one answer changed) fails the check that owns it and no other; a part that refuses a call gets
"not available" with the reason, never a failure. The XID watch and the live reader run against fakes of
nvidia-ml-py with its real error classes."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from hwprobe.health import checks
from hwprobe.health.nvml_reader import LiveNvml, Recorded, Recorder, XidWatch, read_gpu
from hwprobe.vocab import Verdict

HEALTHY = Path(__file__).parent / "data" / "nvml" / "h100-sxm-healthy.json"
NOT_SUPPORTED = {"error": 3}


def _load(sample):
    for _ in range(3):
        sample()


def verdicts(load=_load, **changes) -> dict[str, checks.HealthVerdict]:
    nv = Recorded.load(HEALTHY, **changes)
    out = {v.check: v for v in checks.gpu_verdicts(read_gpu(nv, "GPU 0", load=load))}
    assert not nv.missing, nv.missing           # every call the reader made is in the recording
    return out


@pytest.mark.parametrize("path", sorted(HEALTHY.parent.glob("*-healthy.json")), ids=lambda p: p.stem)
def test_every_healthy_recording_reads_fully_and_passes(path):
    """A recording dropped in from a real GPU (python -m hwprobe.probes.health.record) is checked here as it is."""
    nv = Recorded.load(path)
    got = checks.gpu_verdicts(read_gpu(nv, "GPU 0", load=_load))
    assert not nv.missing, nv.missing
    assert not [v.line() for v in got if v.verdict in (Verdict.FAIL, Verdict.WARN)]


def test_a_recorder_keeps_a_call_asked_again_with_another_answer_in_order():
    answers = iter([1, 1, 5])
    rec = Recorder(lambda name, *args: next(answers))
    assert [rec("nvmlDeviceGetCurrPcieLinkGeneration") for _ in range(3)] == [1, 1, 5]
    assert rec.calls == {"nvmlDeviceGetCurrPcieLinkGeneration()": {"answers": [1, 5]}}
    replay = Recorded(json.loads(rec.to_json("test"))["calls"])
    assert [replay("nvmlDeviceGetCurrPcieLinkGeneration") for _ in range(3)] == [1, 5, 5]


def test_the_healthy_recording_passes_every_check_it_can_read():
    got = verdicts()
    assert {k: v.verdict for k, v in got.items() if k != "xid"} == {
        "ecc": Verdict.PASS, "memory_remap": Verdict.PASS, "pcie": Verdict.PASS, "nvlink": Verdict.PASS,
        "idle_throttle": Verdict.PASS, "power_limit": Verdict.PASS}
    assert got["xid"].verdict == Verdict.NOT_AVAILABLE          # no watch in a one-shot read
    assert "Gen5 x16" in got["pcie"].reason and "18 NVLinks up" in got["nvlink"].reason


# (answers changed, the check that must fail, words its reason must hold)
UNHEALTHY = [
    ({"nvmlDeviceGetTotalEccErrors(1,0)": 2}, "ecc", "2 uncorrectable"),
    ({"nvmlDeviceGetRemappedRows()": [0, 1, 1, 0]}, "memory_remap", "pending"),
    ({"nvmlDeviceGetRemappedRows()": [3, 9, 0, 1]}, "memory_remap", "no spare row"),
    ({"nvmlDeviceGetRemappedRows()": NOT_SUPPORTED, "nvmlDeviceGetRetiredPages(0)": [4096, 8192],
      "nvmlDeviceGetRetiredPages(1)": [12288], "nvmlDeviceGetRetiredPagesPendingStatus()": 1},
     "memory_remap", "retirement is pending"),
    ({"nvmlDeviceGetRemappedRows()": NOT_SUPPORTED, "nvmlDeviceGetRetiredPages(0)": list(range(50)),
      "nvmlDeviceGetRetiredPages(1)": list(range(11)), "nvmlDeviceGetRetiredPagesPendingStatus()": 0},
     "memory_remap", "61 of at most 64"),
    ({"nvmlDeviceGetCurrPcieLinkWidth()": 8}, "pcie", "x8 of Gen5 x16"),
    ({"nvmlDeviceGetCurrPcieLinkGeneration()": {"answers": [1, 3]}}, "pcie", "under a host copy: Gen3"),
    ({"nvmlDeviceGetNvLinkState(5)": 0}, "nvlink", "1 of 18 NVLinks down (links 5)"),
    ({"nvmlDeviceGetCurrentClocksEventReasons()": 0x41}, "idle_throttle", "hw_thermal_slowdown"),
    ({"nvmlDeviceGetCurrentClocksEventReasons()": 0x81}, "idle_throttle", "hw_power_brake_slowdown"),
    ({"nvmlDeviceGetPowerManagementLimit()": 500000}, "power_limit", "500 W is below the default 700 W"),
    ({"nvmlDeviceGetEnforcedPowerLimit()": 450000}, "power_limit", "enforced limit 450 W"),
]


@pytest.mark.parametrize("changes,check,words", UNHEALTHY, ids=[f"{c}-{w}" for _, c, w in UNHEALTHY])
def test_each_unhealthy_recording_fails_its_own_check_and_no_other(changes, check, words):
    got = verdicts(**changes)
    assert got[check].verdict == Verdict.FAIL, got[check].line()
    assert words in got[check].reason, got[check].reason
    assert [k for k, v in got.items() if v.verdict == Verdict.FAIL] == [check]


@pytest.mark.parametrize("changes,check,words", [
    ({"nvmlDeviceGetEccMode()": [0, 0]}, "ecc", "ECC is off"),
    ({"nvmlDeviceGetTotalEccErrors(1,1)": 3}, "ecc", "lifetime, none since the driver loaded"),
    ({"nvmlDeviceGetRemappedRows()": NOT_SUPPORTED, "nvmlDeviceGetRetiredPages(0)": [1, 2],
      "nvmlDeviceGetRetiredPages(1)": [], "nvmlDeviceGetRetiredPagesPendingStatus()": 0}, "memory_remap", "2 of"),
    ({"nvmlDeviceGetNvLinkErrorCounter(2,0)": 17}, "nvlink", "replay 17"),
    ({"nvmlDeviceGetCurrentClocksEventReasons()": 0x3}, "idle_throttle", "applications_clocks_setting"),
    ({"nvmlDeviceGetMaxPcieLinkGeneration()": 4, "nvmlDeviceGetCurrPcieLinkGeneration()": 4}, "pcie",
     "slot caps the link at Gen4"),
])
def test_warnings_are_told_without_failing(changes, check, words):
    got = verdicts(**changes)
    assert got[check].verdict == Verdict.WARN and words in got[check].reason, got[check].line()


def test_an_idle_pcie_reading_below_the_max_only_warns_when_not_read_under_load():
    got = verdicts(load=None, **{"nvmlDeviceGetCurrPcieLinkGeneration()": 1})
    assert got["pcie"].verdict == Verdict.WARN and "not read under load" in got["pcie"].reason
    under = verdicts(**{"nvmlDeviceGetCurrPcieLinkGeneration()": {"answers": [1, 5]}})
    assert under["pcie"].verdict == Verdict.PASS and under["pcie"].values["gen_under_load"] == 5


def test_a_busy_gpu_gets_no_idle_throttle_verdict():
    got = verdicts(**{"nvmlDeviceGetCurrentClocksEventReasons()": 0x4,
                      "nvmlDeviceGetUtilizationRates()": {"gpu": 85, "memory": 40}})
    assert got["idle_throttle"].verdict == Verdict.NOT_AVAILABLE and "85% busy" in got["idle_throttle"].reason


def test_drivers_without_the_clocks_event_name_are_read_through_the_throttle_name():
    got = verdicts(**{"nvmlDeviceGetCurrentClocksEventReasons()": {"error": 13},
                      "nvmlDeviceGetCurrentClocksThrottleReasons()": 0x21})
    assert got["idle_throttle"].verdict == Verdict.FAIL and "sw_thermal_slowdown" in got["idle_throttle"].reason


def test_a_part_refusing_every_call_is_not_available_never_failed():
    refused = Recorded({})                     # every call: NotSupported
    got = checks.gpu_verdicts(read_gpu(refused, "GPU 0"))
    assert {v.verdict for v in got} == {Verdict.NOT_AVAILABLE}
    by = {v.check: v.reason for v in got}
    assert "nvmlDeviceGetEccMode: not supported on this part" in by["ecc"]
    assert "row remapping" in by["memory_remap"] and "page retirement" in by["memory_remap"]
    assert by["nvlink"] == "this GPU has no NVLink"


def test_no_permission_is_told_as_such():
    got = verdicts(**{"nvmlDeviceGetPowerManagementDefaultLimit()": {"error": 4}})
    assert got["power_limit"].verdict == Verdict.NOT_AVAILABLE and "root" in got["power_limit"].reason


# --- the live reader and the XID watch against fakes of nvidia-ml-py (its real error classes) ------------------

def _fake_pynvml(**fns):
    import pynvml

    return types.SimpleNamespace(NVMLError=pynvml.NVMLError, **fns)


def test_live_reader_turns_nvml_errors_and_missing_functions_into_reasons():
    import pynvml

    def not_supported(h):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    fake = _fake_pynvml(nvmlDeviceGetEccMode=lambda h: [1, 1], nvmlDeviceGetTotalEccErrors=lambda h, e, c: 0,
                        nvmlDeviceGetRemappedRows=not_supported,
                        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(
                            _fields_=[("gpu", None), ("memory", None)], gpu=3, memory=1),
                        nvmlDeviceGetCurrentClocksEventReasons=lambda h: 1)
    rec = Recorder(LiveNvml(fake, "handle"))
    r = read_gpu(rec, "GPU 0")
    assert r.ecc.enabled and r.ecc.volatile_uncorrected == 0
    assert "nvmlDeviceGetRemappedRows: not supported on this part" == r.row_remap.reason
    assert "nvidia-ml-py has no nvmlDeviceGetRetiredPages" in r.retired_pages.reason
    assert r.throttle.gpu_util_pct == 3                   # a ctypes-like structure read field by field
    assert rec.calls["nvmlDeviceGetRemappedRows()"] == {"error": 3}
    assert rec.calls["nvmlDeviceGetUtilizationRates()"] == {"gpu": 3, "memory": 1}
    assert Recorded(rec.calls)("nvmlDeviceGetTotalEccErrors", 1, 0) == 0        # a recording replays


class _Events:
    """nvidia-ml-py's event calls over a queue of (type, data) events; Timeout when it is empty."""

    def __init__(self, queue, supported=0x8 | 0x2):
        import pynvml

        self.queue, self.freed, self.supported, self.NVMLError = list(queue), 0, supported, pynvml.NVMLError

    def nvmlDeviceGetSupportedEventTypes(self, h):
        return self.supported

    def nvmlEventSetCreate(self):
        return "set"

    def nvmlDeviceRegisterEvents(self, h, types_, s):
        assert types_ == 0x8 and s == "set"

    def nvmlEventSetWait_v2(self, s, timeout_ms):
        assert timeout_ms == 0                  # never blocks the end of the run
        if not self.queue:
            raise self.NVMLError(10)
        t, d = self.queue.pop(0)
        return types.SimpleNamespace(eventType=t, eventData=d)

    def nvmlEventSetFree(self, s):
        self.freed += 1


def _xid_verdict(queue, **kw):
    ev = _Events(queue, **kw)
    times = iter([100.0, 142.0])
    w = XidWatch(ev, "h", clock=lambda: next(times))
    started = w.start()
    r = read_gpu(Recorded.load(HEALTHY), "GPU 0", load=_load)
    r.xid = w.drain() if started else r.xid
    return checks.xid(r), ev, started, w


def test_a_hardware_xid_during_the_run_fails_and_the_event_set_is_freed():
    v, ev, started, _ = _xid_verdict([(0x8, 79), (0x8, 79)])
    assert started and v.verdict == Verdict.FAIL and ev.freed == 1
    assert "79 (GPU has fallen off the bus)" in v.reason and "over 42 s" in v.reason and v.values["events"] == [79, 79]


def test_no_xid_passes_and_an_application_xid_only_warns():
    assert _xid_verdict([])[0].verdict == Verdict.PASS
    v = _xid_verdict([(0x8, 13), (0x8, 31)])[0]
    assert v.verdict == Verdict.WARN and "GPU memory page fault" in v.reason


def test_a_gpu_without_xid_events_says_so():
    _, _, started, w = _xid_verdict([], supported=0x2)
    assert not started and "does not report XID events" in w.why
    assert w.drain().reason == w.why


# --- gpu.health itself, over a fake nvidia-ml-py answering from the recording -------------------------------------

class _FakePynvml:
    """nvidia-ml-py whose device calls answer from a recording (refusals as its real NVMLError classes) and whose
    event calls deliver ``events``."""

    def __init__(self, recorded: Recorded, events):
        import pynvml

        self.NVMLError, self.rec, self.ev = pynvml.NVMLError, recorded, _Events(events)

    def __getattr__(self, name):
        if hasattr(self.ev, name):
            return getattr(self.ev, name)
        if not name.startswith("nvmlDevice"):
            raise AttributeError(name)

        def call(handle, *args):
            from hwprobe.health.nvml_reader import NvmlRefused

            assert handle == "handle-of-gpu3"
            try:
                return self.rec(name, *args)
            except NvmlRefused as e:
                raise self.NVMLError(e.code) from None
        return call


def test_gpu_health_probe_records_each_verdict_and_drains_xids_at_the_run_end(monkeypatch):
    import sys

    from hwprobe.device import nvml as hw_nvml
    from hwprobe.device.info import GpuInfo
    from hwprobe.health import from_measurement
    from hwprobe.probes.health import verdicts as probe_mod

    fake = _FakePynvml(Recorded.load(HEALTHY, **{"nvmlDeviceGetPowerManagementLimit()": 400000}), [(0x8, 48)])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(hw_nvml, "handle", lambda info: "handle-of-gpu3")
    loaded = []
    monkeypatch.setattr(probe_mod, "host_copy_load", lambda index: lambda sample: loaded.append(index) or sample())
    gpu = GpuInfo(3, "H100 SXM", 9, 0, 132, 50 << 20, 80 << 30, 2619.0, 5120, 1980.0)
    at_end = []
    ctx = types.SimpleNamespace(devices=[gpu], device=gpu, at_end=at_end.append)
    recs = list(probe_mod.gpu_health(ctx))
    got = {r.metric: from_measurement(r.to_dict()) for r in recs}
    assert list(got) == [f"health.{c}.gpu3" for c in ("ecc", "memory_remap", "pcie", "nvlink", "idle_throttle",
                                                       "power_limit")]
    assert got["health.power_limit.gpu3"].verdict == Verdict.FAIL and got["health.pcie.gpu3"].verdict == Verdict.PASS
    assert loaded == [3] and all(r.kind == "info" and r.probe == "gpu.health" for r in recs)
    assert recs[0].notes == ["GPU 3: ecc: pass: no uncorrectable ECC error; corrected: 0 since the driver loaded"]
    (drain,) = at_end                                       # the XID watch, drained once every probe has run
    (xid,) = list(drain())
    v = from_measurement(xid.to_dict())
    assert xid.metric == "health.xid.gpu3" and v.verdict == Verdict.FAIL and "48 (double-bit ECC error)" in v.reason
    assert fake.ev.freed == 1


def test_gpu_health_on_a_jetson_reads_sysfs_not_nvml(tmp_path, monkeypatch):
    import shutil

    from hwprobe.device import jetson
    from hwprobe.device import nvml as hw_nvml
    from hwprobe.device.info import GpuInfo
    from hwprobe.health import from_measurement
    from hwprobe.probes.health import verdicts as probe_mod

    root = tmp_path / "board"
    shutil.copytree(Path(__file__).parent / "fixtures" / "jetson" / "agx-orin-15w-jp6", root, symlinks=True)
    monkeypatch.setattr(hw_nvml, "handle", lambda info: pytest.fail("NVML asked on a Jetson"))
    gpu = GpuInfo(0, "Orin", 8, 7, 16, 4 << 20, 64 << 30, 3200.0, 256, 1300.0, integrated=True,
                  jetson=jetson.read(root, use_commands=False).to_dict())
    ctx = types.SimpleNamespace(devices=[gpu], device=gpu, at_end=lambda fn: pytest.fail("no XID watch on a Jetson"))
    got = {from_measurement(r.to_dict()).check: from_measurement(r.to_dict())
           for r in probe_mod.gpu_health(ctx, jetson_root=str(root))}
    assert set(got) == {"thermal", "live_sms", "clock_caps"} and got["live_sms"].verdict == Verdict.PASS


def test_crc_errors_the_link_corrected_pass_and_replays_warn():
    """The H200 recorded on 2026-11-27 (tests/data/nvml/h200-sxm-healthy.json) counts 3-26 CRC data errors on every
    NVLink since the driver loaded, with no replay and no recovery: links correcting their own bit errors, which
    a healthy part does. A replay or a recovery (a retrained link) is what warns."""
    import json

    from hwprobe.health import checks
    from hwprobe.health.nvml_reader import Recorded, read_gpu

    path = Path(__file__).parent / "data" / "nvml" / "h200-sxm-healthy.json"
    calls = json.loads(path.read_text())["calls"]
    crc = [v for k, v in calls.items() if k.startswith("nvmlDeviceGetNvLinkErrorCounter(") and k.endswith(",3)")]
    assert sum(crc) > 0
    v = checks.nvlink(read_gpu(Recorded(calls), device="GPU 0"))
    assert v.verdict == Verdict.PASS and "CRC errors corrected" in v.reason and "crc_data" in v.reason
    calls["nvmlDeviceGetNvLinkErrorCounter(4,1)"] = 2                      # a recovery on link 4
    v = checks.nvlink(read_gpu(Recorded(calls), device="GPU 0"))
    assert v.verdict == Verdict.WARN and "recovery 2" in v.reason
