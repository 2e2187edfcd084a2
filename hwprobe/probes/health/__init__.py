"""Health probes: verdicts from NVML, Jetson sysfs or Linux sysfs, recorded beside the ceilings."""
