/* gesummv: y = alpha A x + beta B x (n x n, doubles), one fused row loop nest.
 * Factors: tiles T_I T_J (0 = untiled), unroll U_I U_J, scalar replacement (two register
 * accumulators per row), SIMD pragmas, OpenMP over row bands. */
static double *A, *B, *x, *tmp, *y, *Ry;
static const double alpha = 1.5, beta = 1.2;

static void setup(int n) {
    A = alloc((size_t)n * n); B = alloc((size_t)n * n); x = alloc(n); tmp = alloc(n); y = alloc(n); Ry = alloc(n);
    for (int i = 0; i < n; i++) {
        x[i] = (double)(i % n) / n;
        for (int j = 0; j < n; j++) {
            A[(size_t)i * n + j] = (double)((i * j + 1) % n) / n;
            B[(size_t)i * n + j] = (double)((i * j + 2) % n) / n;
        }
    }
}

static void reset(int n) {
    memset(tmp, 0, sizeof(double) * n);
    memset(y, 0, sizeof(double) * n);
}

static void kernel(int n) {
    const int TI = ${T_I} ? ${T_I} : band(n), TJ = ${T_J} ? ${T_J} : n;
    ${OMP_FOR}
    for (int ii = 0; ii < n; ii += TI) {
        for (int jj = 0; jj < n; jj += TJ) {
            ${UNROLL_I}
            for (int i = ii; i < MIN(ii + TI, n); i++) {
#if ${SCR}
                double t = 0.0, u = 0.0;
                ${SIMD_REDUCE2}
                ${UNROLL_JR}
                for (int j = jj; j < MIN(jj + TJ, n); j++) {
                    t += A[(size_t)i * n + j] * x[j];
                    u += B[(size_t)i * n + j] * x[j];
                }
                tmp[i] += t;
                y[i] += u;
#else
                ${SIMD}
                ${UNROLL_J}
                for (int j = jj; j < MIN(jj + TJ, n); j++) {
                    tmp[i] += A[(size_t)i * n + j] * x[j];
                    y[i] += B[(size_t)i * n + j] * x[j];
                }
#endif
            }
        }
        for (int i = ii; i < MIN(ii + TI, n); i++) y[i] = alpha * tmp[i] + beta * y[i];
    }
}

static void reference(int n) {
    for (int i = 0; i < n; i++) {
        double t = 0.0, u = 0.0;
        for (int j = 0; j < n; j++) {
            t += A[(size_t)i * n + j] * x[j];
            u += B[(size_t)i * n + j] * x[j];
        }
        Ry[i] = alpha * t + beta * u;
    }
}

static double error(int n) { return rel_error(y, Ry, n); }
static double checksum(int n) { return sum(y, n); }
