"""hwprobe: what the hardware really delivers, per precision, unit and memory level, beside the datasheet.

``import hwprobe`` is light: GPU libraries load only when a GPU probe runs.
"""

__version__ = "0.1.0"


def run(*args, **kwargs):
    """Run a suite and return the RunResult (profile + results directory). See hwprobe.api.run."""
    from hwprobe.api import run as _run

    return _run(*args, **kwargs)


def load_profile(path):
    """Load, migrate and validate a profile.json (a killed run's is rebuilt). See hwprobe.profile_build.load_profile."""
    from hwprobe.profile_build import load_profile as _load

    return _load(path)


def analyze(model, profile=None, **kwargs):
    """A model's layers on the measured roofline: an Analysis whose ``layers`` is a pandas DataFrame.
    See hwprobe.analysis.analyze (model: ONNX file, layer CSV or built-in name; profile: results dir or JSON)."""
    from hwprobe.analysis import analyze as _analyze

    return _analyze(model, profile, **kwargs)


__all__ = ["__version__", "run", "load_profile", "analyze"]
