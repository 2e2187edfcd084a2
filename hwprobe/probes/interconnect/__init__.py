"""Interconnect probes: the host link, peer-to-peer between GPUs, NCCL collectives."""
