/* The four STREAM kernels (copy, scale, add, triad) as McCalpin's stream.c times them: OpenMP static
 * split, every array first touched by the thread that later uses it, best of NTIMES, bytes counted as
 * STREAM counts them (no write-allocate traffic). Written for hwprobe's comparison tool only
 * (tools/cpu_stream_compare.py); it is not McCalpin's code and reports under its own name.
 *
 * Copy is a memcpy of each thread's static share, because that is what gcc -O3 makes of stream.c's copy loop:
 * stream.c's arrays are distinct static objects, so the loop is a memcpy idiom (and libc's memcpy uses
 * non-temporal stores on large arrays). Here the arrays are malloc'd pointers gcc cannot prove apart, and
 * OpenMP outlining drops restrict, so the same loop would stay a loop of regular stores (issue 35).
 *
 * Build: gcc -O3 -fopenmp stream_ref.c -o stream_ref      Run: ./stream_ref ELEMENTS NTIMES
 * Output: one line per kernel: "<name> <best GB/s> <median GB/s>". */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000000L;
    int ntimes = argc > 2 ? atoi(argv[2]) : 20;
    if (n <= 0 || ntimes < 2) { fprintf(stderr, "usage: stream_ref ELEMENTS NTIMES(>=2)\n"); return 2; }
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
    double *t = malloc(4 * (size_t)ntimes * sizeof(double)), s = 3.0;
    if (!a || !b || !c || !t) { fprintf(stderr, "stream_ref: out of memory\n"); return 2; }
#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; j++) { a[j] = 1.0; b[j] = 2.0; c[j] = 0.0; }
    for (int k = 0; k < ntimes; k++) {
        double t0 = omp_get_wtime();
#pragma omp parallel
        {   /* schedule(static)'s split: the first n % nt threads take one element more */
            long nt = omp_get_num_threads(), t = omp_get_thread_num(), q = n / nt, r = n % nt;
            long lo = t * q + (t < r ? t : r), len = q + (t < r);
            memcpy(c + lo, a + lo, len * sizeof(double));
        }
        double t1 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) b[j] = s * c[j];
        double t2 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) c[j] = a[j] + b[j];
        double t3 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) a[j] = b[j] + s * c[j];
        double t4 = omp_get_wtime();
        t[0 * ntimes + k] = t1 - t0; t[1 * ntimes + k] = t2 - t1;
        t[2 * ntimes + k] = t3 - t2; t[3 * ntimes + k] = t4 - t3;
    }
    const char *name[4] = {"copy", "scale", "add", "triad"};
    const double bytes[4] = {16.0, 16.0, 24.0, 24.0};
    for (int i = 0; i < 4; i++) {
        double *ti = t + i * ntimes + 1;          /* the first pass is a warm-up, as in stream.c */
        qsort(ti, ntimes - 1, sizeof(double), cmp);
        printf("%s %.3f %.3f\n", name[i], bytes[i] * n / ti[0] * 1e-9, bytes[i] * n / ti[(ntimes - 1) / 2] * 1e-9);
    }
    /* the result is checked so the compiler cannot drop a kernel: every element follows the recurrence */
    double ea = 1.0, eb = 2.0, ec = 0.0;
    for (int k = 0; k < ntimes; k++) { ec = ea; eb = s * ec; ec = ea + eb; ea = eb + s * ec; }
    if (a[n / 2] != ea || b[n - 1] != eb || c[0] != ec) { fprintf(stderr, "stream_ref: wrong result\n"); return 1; }
    return 0;
}
