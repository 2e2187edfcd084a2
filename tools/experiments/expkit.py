"""What the device experiments share: an NVML poller ((t, SM MHz, W, C, throttle mask) every 20 ms), the
cuBLAS environment of gpu.gemm, and a settled, sustained rate of one GEMM call."""
import threading
import time

import pynvml


class Poll:
    def __init__(self, index: int = 0, period: float = 0.02):
        pynvml.nvmlInit()
        self.h = pynvml.nvmlDeviceGetHandleByIndex(index)
        self.period, self.rows, self._stop = period, [], threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        h = self.h
        while not self._stop.is_set():
            try:
                self.rows.append((time.perf_counter(), pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                                  pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                                  pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
                                  pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)))
            except pynvml.NVMLError:
                pass
            time.sleep(self.period)

    def window(self, t0: float, t1: float) -> dict:
        import numpy as np
        r = [x for x in self.rows if t0 <= x[0] <= t1]
        if not r:
            return {}
        a = np.array([x[1:4] for x in r])
        mask = 0
        for x in r:
            mask |= x[4]
        return {"sm_mhz": float(np.median(a[:, 0])), "power_w": float(np.median(a[:, 1])),
                "temp_c": float(np.median(a[:, 2])), "throttle": hex(mask), "n": len(r)}

    def stop(self):
        self._stop.set()
        self.t.join()


def event_median_s(fn, reps: int = 7) -> float:
    """Median seconds of ``reps`` calls of ``fn`` after one warm-up, each between a pair of CUDA events."""
    import cupy as cp
    import numpy as np

    ev = [cp.cuda.Event(), cp.cuda.Event()]
    fn()
    ts = []
    for _ in range(reps):
        ev[0].record()
        fn()
        ev[1].record()
        ev[1].synchronize()
        ts.append(cp.cuda.get_elapsed_time(ev[0], ev[1]) / 1e3)
    return float(np.median(ts))


def gemm_env():
    """gpu.gemm's cuBLAS environment (nvmath binding, workspace), sized by this device's L2."""
    import cupy as cp

    from hwprobe.probes.compute import cublas as gg

    dev = type("Dev", (), {"l2_bytes": cp.cuda.Device().attributes["L2CacheSize"]})()
    return gg.cublas_env(type("Ctx", (), {"device": dev})())


def sustained(call, sets: int, ops: float, poll: Poll, settle_s: float, seconds: float) -> tuple[float, dict]:
    """(ops/s, NVML window) of ``call(i)`` run back to back for ``seconds`` after ``settle_s`` of the same work
    (synchronized every 8 calls; the window skips its first 0.2 s)."""
    import cupy as cp

    stream = cp.cuda.get_current_stream()
    t_end = time.perf_counter() + settle_s
    while time.perf_counter() < t_end:
        call(0)
        stream.synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    calls = 0
    t0 = time.perf_counter()
    s.record()
    while time.perf_counter() - t0 < seconds:
        for j in range(8):
            call((calls + j) % sets)
        calls += 8
        stream.synchronize()
    e.record()
    e.synchronize()
    window = poll.window(t0 + 0.2, time.perf_counter())
    return ops * calls / (cp.cuda.get_elapsed_time(s, e) * 1e-3), window
