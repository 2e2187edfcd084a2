"""Node health beside the measured ceilings: readings -> verdicts, each with its reason.

readings.py holds what was read (plain dataclasses; a value the part or driver does not offer is an
``Unavailable`` with the reason); checks.py turns readings into ``HealthVerdict``s and is pure (tests feed it
recorded NVML answers); nvml_reader.py, jetson.py and cpu.py are the thin reading layers (NVML, Jetson sysfs, Linux
sysfs). A health probe only READS: it never changes clocks, power limits or modes, and never resets anything.
"""

from hwprobe.health.verdict import HealthVerdict, from_measurement, to_measurement, worst

__all__ = ["HealthVerdict", "from_measurement", "to_measurement", "worst"]
