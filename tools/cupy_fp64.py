"""cupy.matmul's FP64 rate at 8192^3, the peer of gpu.gemm's FP64 library ceiling (issue 33), for a device script to
run before and after a suite in the same lease: one line, the median of 20 event-timed calls after 3 untimed.

    python3 tools/cupy_fp64.py >> "$W/cupy_fp64.txt"
"""

import cupy as cp

N = 8192


def main() -> None:
    a, b = cp.random.rand(N, N), cp.random.rand(N, N)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        a @ b
    times = []
    for _ in range(20):
        start.record()
        a @ b
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    times.sort()
    print(f"cupy.matmul fp64 {N}: median {2 * N ** 3 / times[10] / 1e12:.2f} TFLOP/s")


if __name__ == "__main__":
    main()
