/* Tunelab C kernel harness: times kernel() in-process with a monotonic clock over repeats,
 * then checks the output against a plain reference implementation.
 * Usage: PROGRAM N WARMUP REPEATS CHECK   ->  one JSON line on stdout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MIN(a, b) ((a) < (b) ? (a) : (b))

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double *alloc(size_t count) {
    void *p = NULL;
    if (posix_memalign(&p, 64, count * sizeof(double)) != 0) {
        fprintf(stderr, "out of memory allocating %zu doubles\n", count);
        exit(3);
    }
    return (double *)p;
}

/* Rows per parallel band when a loop is not tiled: one band per thread. */
static int band(int n) {
#ifdef _OPENMP
    int threads = omp_get_max_threads();
#else
    int threads = 1;
#endif
    return (n + threads - 1) / threads;
}

/* Largest |x - r| over the largest |r|: the norm-wise relative error of x against reference r. */
static double rel_error(const double *x, const double *r, size_t count) {
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < count; i++) {
        double d = fabs(x[i] - r[i]);
        if (d > diff || d != d) diff = d;
        if (fabs(r[i]) > scale) scale = fabs(r[i]);
    }
    return scale > 0.0 ? diff / scale : diff;
}

static double sum(const double *x, size_t count) {
    double s = 0.0;
    for (size_t i = 0; i < count; i++) s += x[i];
    return s;
}

/* @KERNEL@ */

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s N WARMUP REPEATS CHECK\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), warmup = atoi(argv[2]), repeats = atoi(argv[3]), check = atoi(argv[4]);
    if (n < 4 || warmup < 0 || repeats < 1) {
        fprintf(stderr, "bad arguments: N >= 4, WARMUP >= 0, REPEATS >= 1\n");
        return 2;
    }
    setup(n);
    for (int w = 0; w < warmup; w++) {
        reset(n);
        kernel(n);
    }
    printf("{\"times\":[");
    for (int r = 0; r < repeats; r++) {
        reset(n);
        double t0 = now_s();
        kernel(n);
        double t1 = now_s();
        printf("%s%.9e", r ? "," : "", t1 - t0);
        fflush(stdout);
    }
    printf("],\"checksum\":%.17g", checksum(n));
    if (check) {
        reference(n);
        printf(",\"error\":%.6e", error(n));
    }
    printf("}\n");
    return 0;
}
