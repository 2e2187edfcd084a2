"""CLI: exit codes (0 ok, 1 probe failure, 2 bad input) and one-line errors, never a traceback."""

import json
import subprocess
import sys

import pytest

from hwprobe.profile_build import from_measurements
from tests.helpers import sample_measurements


def hw(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hwprobe", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def one_line_error(r, code=2):
    assert r.returncode == code, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("hwprobe: error: "), r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


@pytest.fixture
def profile_file(tmp_path):
    p = tmp_path / "profile.json"
    from_measurements({"kind": "gpu", "name": "NVIDIA H200"}, sample_measurements()).save(p)
    return p


def test_unknown_device_index_lists_devices():
    assert "no GPU with index 7" in one_line_error(hw("run", "--device", "7"))


def test_unknown_suite_lists_suites():
    line = one_line_error(hw("run", "--device", "cpu", "--suite", "nosuch"))
    assert "cpu" in line and "default" in line


def test_unknown_precision():
    assert "unknown precision fp99" in one_line_error(hw("run", "--device", "cpu", "--precision", "fp99"))


def test_unwritable_out(tmp_path):
    (tmp_path / "f").write_text("x")
    assert "cannot write results" in one_line_error(hw("run", "--device", "cpu", "--out", str(tmp_path / "f" / "x")))


def test_bad_option_is_one_line():
    one_line_error(hw("run", "--bogus"))
    one_line_error(hw("list", "nothing"))


def test_report_bad_profiles(tmp_path, profile_file):
    assert "does not exist" in one_line_error(hw("report", str(tmp_path / "none.json")))
    text = profile_file.read_text()
    trunc = tmp_path / "trunc.json"
    trunc.write_text(text[:200])
    assert "not valid JSON" in one_line_error(hw("report", str(trunc)))
    d = json.loads(text)
    d["schema_version"] = 7
    fut = tmp_path / "future.json"
    fut.write_text(json.dumps(d))
    assert "newer than this hwprobe" in one_line_error(hw("report", str(fut)))


def test_report_prints_the_tables(profile_file):
    r = hw("report", str(profile_file))
    assert r.returncode == 0, r.stderr
    assert "Compute ceilings" in r.stdout and "fp32" in r.stdout and "Memory ceilings" in r.stdout
    assert "7x slower" in r.stdout


def test_specs_named_and_unknown():
    r = hw("specs", "A100 SXM4 80GB")
    assert r.returncode == 0, r.stderr
    assert "312" in r.stdout
    line = one_line_error(hw("specs", "A100 SXM4 8OGB"))
    assert "close matches" in line and "A100 SXM4 80GB" in line


def test_list():
    r = hw("list", "probes")
    assert r.returncode == 0 and "cpu.fma" in r.stdout and "gpu.fma" in r.stdout
    r = hw("list", "suites")
    assert r.returncode == 0 and "default" in r.stdout and "cpu" in r.stdout


def test_help_exits_zero():
    r = hw("--help")
    assert r.returncode == 0 and "run" in r.stdout


def test_plot_writes_a_png_of_the_valid_roofs(tmp_path, profile_file):
    """The PNG is written, and its figure draws the profile's valid ceilings as solid flat roofs (not the FP64
    figure judged above theory), each inside the axes."""
    r = hw("plot", str(profile_file.parent), "-o", str(tmp_path / "r.png"), "--kind", "roofline")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from hwprobe.cli import main
    from tests.figures import data_lines, saved_figures, texts

    with saved_figures() as figs, pytest.raises(SystemExit) as done:
        main(["plot", str(profile_file.parent), "-o", str(tmp_path / "again.png"), "--kind", "roofline"])
    assert done.value.code == 0 and len(figs) == 1
    fig = figs[0]
    assert "NVIDIA H200: measured roofline" in texts(fig)
    roofs = {}
    for ax in fig.axes:
        flat = [ln.get_ydata()[0] for ln in data_lines(ax) if ln.get_linestyle() == "-" and len(ln.get_ydata()) == 2
                and ln.get_ydata()[0] == ln.get_ydata()[1]]
        roofs[ax.get_title(loc="left")] = sorted(flat)
        assert all(ax.get_ylim()[0] < y < ax.get_ylim()[1] for y in flat)
    assert roofs == {"Tensor Cores": [800e12, 1.4e15], "CUDA cores": [58e12]}


def test_plot_to_one_file_with_every_kind_is_refused(tmp_path, profile_file):
    """-o r.png with --kind all (the default) drew the roofline alone and exited 0: the other kinds were lost."""
    r = hw("plot", str(profile_file.parent), "-o", str(tmp_path / "r.png"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and not (tmp_path / "r.png").exists()
    assert "give one --kind" in r.stderr and "a folder for every kind (--kind all, the default)" in r.stderr


def test_ctrl_c_mid_run_keeps_a_partial_profile(tmp_path):
    """A real SIGINT after the first measurement: exit 130, and the profile holds what finished.

    The signal may land while numba compiles the stream kernel: the run must finish the compile (a
    KeyboardInterrupt inside llvmlite crashed the process once) and stop at the next sample.
    """
    import signal
    import time

    from hwprobe.profile_build import load_profile

    suite = tmp_path / "s.toml"
    suite.write_text('target = "cpu"\n[[probes]]\nprobe = "cpu.fma"\nprecisions = ["fp64"]\n'
                     '[[probes]]\nprobe = "cpu.stream"\nops = ["triad"]\nmin_bytes_per_array = 1500000000\n')
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "hwprobe", "run", "--device", "cpu", "--suite", str(suite),
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:                      # wait for the first measurement on disk
        lines = list(out.glob("*/measurements.jsonl"))
        if lines and lines[0].read_text().count("\n") >= 2:   # the header, then a record
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    prof = load_profile(next(out.glob("*/profile.json")))
    assert prof.partial is True
    assert prof.environment["finished"] is False
    # the FMA figure that finished is kept: a ceiling, or an invalid record where this VM's host boosted past
    # the clock it recorded (judged as such, never dropped)
    assert "fp64" in prof.compute or any(r.get("metric") == "fp64.cpu.fma" for r in prof.invalid), prof.invalid


def test_device_selection_default_list_and_all(monkeypatch):
    """No --device picks GPU 0 or the CPU; "0,1" and "all" pick several GPUs (refused without any)."""
    from hwprobe import device
    from hwprobe.errors import InputError as IE

    monkeypatch.setattr(device, "gpus", lambda: [])
    assert [d.kind for d in device.select_many(None)] == ["cpu"]
    assert [d.kind for d in device.select_many("cpu")] == ["cpu"]
    with pytest.raises(IE, match="no CUDA GPU"):
        device.select_many("all")
    with pytest.raises(IE, match="no GPU with index 0"):
        device.select_many("0,1")
