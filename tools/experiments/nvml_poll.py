"""A tiny NVML poller for experiments: (t, sm MHz, power W, temp C, throttle mask) every 20 ms."""
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
