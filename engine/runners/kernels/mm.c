/* Matrix multiply C = A * B (n x n, doubles), loop order ii kk jj i k j.
 * Factors: tiles T_I T_J T_K (0 = untiled), unroll U_K U_J, scalar replacement of A[i][k],
 * a SIMD pragma on the j loop, OpenMP over row bands. */
static double *A, *B, *C, *R;

static void setup(int n) {
    size_t nn = (size_t)n * n;
    A = alloc(nn); B = alloc(nn); C = alloc(nn); R = alloc(nn);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            A[(size_t)i * n + j] = (double)((i * j + 1) % n) / n;
            B[(size_t)i * n + j] = (double)((i * (j + 1)) % n) / n;
        }
}

static void reset(int n) { memset(C, 0, sizeof(double) * (size_t)n * n); }

static void kernel(int n) {
    const int TI = ${T_I} ? ${T_I} : band(n), TJ = ${T_J} ? ${T_J} : n, TK = ${T_K} ? ${T_K} : n;
    ${OMP_FOR}
    for (int ii = 0; ii < n; ii += TI)
        for (int kk = 0; kk < n; kk += TK)
            for (int jj = 0; jj < n; jj += TJ)
                for (int i = ii; i < MIN(ii + TI, n); i++) {
                    ${UNROLL_K}
                    for (int k = kk; k < MIN(kk + TK, n); k++) {
#if ${SCR}
                        const double a = A[(size_t)i * n + k];
#define A_IK a
#else
#define A_IK A[(size_t)i * n + k]
#endif
                        ${SIMD}
                        ${UNROLL_J}
                        for (int j = jj; j < MIN(jj + TJ, n); j++)
                            C[(size_t)i * n + j] += A_IK * B[(size_t)k * n + j];
#undef A_IK
                    }
                }
}

static void reference(int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int k = 0; k < n; k++) s += A[(size_t)i * n + k] * B[(size_t)k * n + j];
            R[(size_t)i * n + j] = s;
        }
}

static double error(int n) { return rel_error(C, R, (size_t)n * n); }
static double checksum(int n) { return sum(C, (size_t)n * n); }
