import subprocess
import sys


def test_import_hwprobe_loads_no_gpu_library():
    code = ("import sys, hwprobe, hwprobe.cli, hwprobe.probes as p; p.registry(); "
            "print(' '.join(m for m in ('cupy', 'numba.cuda', 'nvmath', 'pynvml', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
