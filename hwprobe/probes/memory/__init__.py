"""Memory probes: DRAM streams, the L1/L2/shared sweep, pointer-chase latencies."""
