"""hwprobe analyze / classify / list models from the command line: outputs, and bad input as one line, exit 2."""

import json
import subprocess
import sys

import pytest

from tests.refs import H200_FULL

H200 = str(H200_FULL / "profile.json")


def hw(*args):
    return subprocess.run([sys.executable, "-m", "hwprobe", *args], capture_output=True, text=True, timeout=120)


def one_line_error(r):
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("hwprobe: error: ") and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def test_analyze_text_sections():
    r = hw("analyze", "resnet50", "--profile", H200, "--precision", "fp16")
    assert r.returncode == 0, r.stderr
    for text in ("convention standard: operations: a multiply-add = 2", "*library* ceilings", "precision what-if",
                 "Tensor Core alignment", "conv1.conv: cin=3 not a multiple of 8", "top 5 time consumers",
                 "predicted", "datasheet"):
        assert text in r.stdout, text


def test_analyze_seed_convention_prints_the_seed_table_row():
    r = hw("analyze", "vgg16", "--convention", "seed")
    assert r.returncode == 0, r.stderr
    assert "the source notes' whole-model table, vgg16" in r.stdout and "reproduced within its rounding" in r.stdout
    assert "a multiply-add = 1 operation" in r.stdout


def test_analyze_json_csv_plot(tmp_path, capsys):
    """JSON, CSV and the plot, which draws each layer with work at its intensity and its achieved rate (its
    operations over its measured time), as the CSV has them."""
    import numpy as np
    import pandas as pd

    from hwprobe.cli import main
    from tests.figures import outside_limits, saved_figures

    with saved_figures() as figs, pytest.raises(SystemExit) as done:
        main(["analyze", "tests/data/tiny_layers.csv", "--profile", H200, "--precision", "int8", "--json",
              "--csv", str(tmp_path / "l.csv"), "--plot", str(tmp_path / "p.png"),
              "--times", "tests/data/times/trtexec_profile.json"])
    assert done.value.code == 0
    d = json.loads(capsys.readouterr().out)
    assert d["model"]["layers"] == 11 and d["timing"]["matched_records"] == 7 and len(d["top"]) == 5
    assert (tmp_path / "l.csv").read_text().startswith("index,name,op")
    assert (tmp_path / "p.png").stat().st_size > 10_000
    (fig,) = figs
    ax = fig.axes[0]
    assert ax.get_title().startswith("tiny_layers at int8, batch 1") and "achieved (measured times)" in ax.get_title()
    df = pd.read_csv(tmp_path / "l.csv")
    df = df[(df["ops"] > 0) & df["measured_s"].notna()]
    dots = np.concatenate([c.get_offsets() for c in ax.collections if c.get_label().endswith(" layers")])
    assert len(dots) == len(df) == 10
    want = np.array(sorted(zip(df["intensity"], df["ops"] / df["measured_s"], strict=True)))
    assert np.allclose(np.array(sorted(map(tuple, dots))), want, rtol=1e-6)
    assert not outside_limits(ax).size


@pytest.mark.parametrize("args,needle", [
    (["analyze", "missing.onnx"], "does not exist"),
    (["analyze", "tests/data/seed002/README.md"], "a model is an .onnx file, a layer .csv or a built-in name"),
    (["analyze", "resnet50", "--profile", H200, "--precision", "fp4"], "unknown precision 'fp4'"),
    (["analyze", "resnet50", "--profile", H200, "--times", "tests/data/seed002/README.md"], "unknown format"),
    (["analyze", "resnet50", "--profile", H200, "--spec", "H100 SXM"], "not both"),
    (["classify"], "Missing argument"),
])
def test_bad_input_is_one_line(args, needle):
    assert needle in one_line_error(hw(*args))


def test_profile_lacking_the_precision(tmp_path):
    from hwprobe.profile_build import load_profile

    p = load_profile(H200)
    del p.compute["fp8"]
    p.save(tmp_path / "profile.json")
    line = one_line_error(hw("analyze", "resnet18", "--profile", str(tmp_path), "--precision", "fp8"))
    assert "no measured fp8 ceiling" in line


def test_bad_csv_is_one_line(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text("name,op,m,k,cin,cout,groups\nc,conv,56,3,8,-8,1\n")
    assert "l.csv row 2 field cout: -8 is negative" in one_line_error(hw("analyze", str(p)))


def test_list_models_and_classify():
    r = hw("list", "models")
    assert r.returncode == 0 and "resnet50" in r.stdout and "densenet121" in r.stdout
    r = hw("classify", "--json", "volta_h884gemm_256x128_ldg8_nn", "volta_scudnn_128x64_relu_interior_nn_v1",
           "weird_kernel")
    units = [(k["unit"], k["confidence"]) for k in json.loads(r.stdout)]
    assert units == [("tensor_core", "heuristic"), ("cuda_core", "heuristic"), ("unknown", "unknown")]


def test_layer_table_and_predicted_kernels_say_which_time_they_show():
    """Issue 35 item 3: the layer table showed roofline times under "by time" (conv1 3.56 us), the kernel list
    predicted times (conv1 15.8 us) under "the most time", nothing telling the two apart. Each names its time,
    and the kernel list gives the layer table's roof time beside the prediction."""
    import os
    import re

    r = subprocess.run([sys.executable, "-m", "hwprobe", "analyze", "resnet50", "--profile",
                        "profiles/h200-sxm/2026-11-26-predict-conv", "-p", "fp16", "--all"], capture_output=True,
                       text=True,
                       timeout=120,
                       env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert " by time" not in r.stdout         # the layer table names its time: the roof time column below
    header = next(x for x in r.stdout.splitlines() if x.lstrip().startswith("#  layer"))
    assert "  roof time  " in header
    table = re.search(r"\n\s+0\s+conv1\.conv .*?(?:compute|memory \(\w+\))\s+([\d.]+ [mun]?s)\s", r.stdout).group(1)
    assert "kernels taking the most predicted time" in r.stdout
    kern = re.search(r"conv1\.conv gemm \S+: ([\d.]+ [mun]?s) \(\w+; at its roof ([\d.]+ [mun]?s)\)", r.stdout)
    assert kern and kern.group(2) == table and kern.group(1) != table


def test_list_models_names_every_built_in_llm():
    """Issue 35 item 14: the 14 built-in LLM names were missing from hwprobe list models."""
    from hwprobe.models.llm import builtin

    r = hw("list", "models")
    assert r.returncode == 0 and len(builtin.CONFIGS) == 14
    names = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
    assert set(builtin.CONFIGS) <= names
    row = next(x for x in r.stdout.splitlines() if x.startswith("llama-3-8b "))
    assert "8.03 B" in row and "32 layers" in row
    moe = next(x for x in r.stdout.splitlines() if x.startswith("mixtral-8x7b "))
    assert "46.70 B" in moe and "8 experts" in moe
