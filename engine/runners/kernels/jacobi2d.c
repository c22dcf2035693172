/* 2-D Jacobi stencil (PolyBench jacobi-2d): STEPS times B = 5-point average of A, then A of B.
 * Factors: tiles T_I T_J (0 = untiled), unroll U_I U_J, scalar replacement (row pointers held in
 * restrict-qualified locals), SIMD pragmas, OpenMP over row bands. */
static double *A, *B, *A0, *RA, *RB;

static void setup(int n) {
    size_t nn = (size_t)n * n;
    A = alloc(nn); B = alloc(nn); A0 = alloc(nn); RA = alloc(nn); RB = alloc(nn);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) A0[(size_t)i * n + j] = ((double)i * (j + 2) + 2) / n;
}

static void reset(int n) {
    memcpy(A, A0, sizeof(double) * (size_t)n * n);
    memcpy(B, A0, sizeof(double) * (size_t)n * n);
}

static void sweep(const double *src, double *dst, int n) {
    const int TI = ${T_I} ? ${T_I} : band(n - 2), TJ = ${T_J} ? ${T_J} : n;
    ${OMP_FOR}
    for (int ii = 1; ii < n - 1; ii += TI)
        for (int jj = 1; jj < n - 1; jj += TJ) {
            ${UNROLL_I}
            for (int i = ii; i < MIN(ii + TI, n - 1); i++) {
#if ${SCR}
                const double *restrict up = src + (size_t)(i - 1) * n, *restrict mid = src + (size_t)i * n;
                const double *restrict down = src + (size_t)(i + 1) * n;
                double *restrict out = dst + (size_t)i * n;
                ${SIMD}
                ${UNROLL_J}
                for (int j = jj; j < MIN(jj + TJ, n - 1); j++)
                    out[j] = 0.2 * (mid[j] + mid[j - 1] + mid[j + 1] + up[j] + down[j]);
#else
                ${SIMD}
                ${UNROLL_J}
                for (int j = jj; j < MIN(jj + TJ, n - 1); j++)
                    dst[(size_t)i * n + j] = 0.2 * (src[(size_t)i * n + j] + src[(size_t)i * n + j - 1] +
                                                    src[(size_t)i * n + j + 1] + src[(size_t)(i - 1) * n + j] +
                                                    src[(size_t)(i + 1) * n + j]);
#endif
            }
        }
}

static void kernel(int n) {
    for (int t = 0; t < ${STEPS}; t++) {
        sweep(A, B, n);
        sweep(B, A, n);
    }
}

static void reference(int n) {
    memcpy(RA, A0, sizeof(double) * (size_t)n * n);
    memcpy(RB, A0, sizeof(double) * (size_t)n * n);
    for (int t = 0; t < ${STEPS}; t++) {
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                RB[(size_t)i * n + j] = 0.2 * (RA[(size_t)i * n + j] + RA[(size_t)i * n + j - 1] + RA[(size_t)i * n + j + 1] +
                                               RA[(size_t)(i - 1) * n + j] + RA[(size_t)(i + 1) * n + j]);
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                RA[(size_t)i * n + j] = 0.2 * (RB[(size_t)i * n + j] + RB[(size_t)i * n + j - 1] + RB[(size_t)i * n + j + 1] +
                                               RB[(size_t)(i - 1) * n + j] + RB[(size_t)(i + 1) * n + j]);
    }
}

static double error(int n) { return rel_error(A, RA, (size_t)n * n); }
static double checksum(int n) { return sum(A, (size_t)n * n); }
