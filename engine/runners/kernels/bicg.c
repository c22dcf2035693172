/* BiCG sub-kernel: q = A p and s = r^T A (n x n, doubles), as two loop nests.
 * Factors: tiles T_I T_J (0 = untiled), unroll U_I U_J, scalar replacement (a register
 * accumulator for q[i], r[i] hoisted for s), SIMD pragmas, OpenMP over row/column bands. */
static double *A, *p, *r, *q, *s, *Rq, *Rs;

static void setup(int n) {
    A = alloc((size_t)n * n); p = alloc(n); r = alloc(n); q = alloc(n); s = alloc(n); Rq = alloc(n); Rs = alloc(n);
    for (int i = 0; i < n; i++) {
        p[i] = (double)(i % 7) / 7.0;
        r[i] = (double)((i * 3) % n) / n;
        for (int j = 0; j < n; j++) A[(size_t)i * n + j] = (double)((i * (j + 1)) % n) / n;
    }
}

static void reset(int n) {
    memset(q, 0, sizeof(double) * n);
    memset(s, 0, sizeof(double) * n);
}

static void kernel(int n) {
    const int TI = ${T_I} ? ${T_I} : band(n), TJ = ${T_J} ? ${T_J} : n;
    const int TJS = ${T_J} ? ${T_J} : band(n);
    /* q = A p: rows */
    ${OMP_FOR}
    for (int ii = 0; ii < n; ii += TI)
        for (int jj = 0; jj < n; jj += TJ) {
            ${UNROLL_I}
            for (int i = ii; i < MIN(ii + TI, n); i++) {
#if ${SCR}
                double acc = 0.0;
                ${SIMD_REDUCE}
                ${UNROLL_JR}
                for (int j = jj; j < MIN(jj + TJ, n); j++) acc += A[(size_t)i * n + j] * p[j];
                q[i] += acc;
#else
                ${SIMD}
                ${UNROLL_J}
                for (int j = jj; j < MIN(jj + TJ, n); j++) q[i] += A[(size_t)i * n + j] * p[j];
#endif
            }
        }
    /* s = r^T A: column bands, rows streamed */
    ${OMP_FOR}
    for (int jj = 0; jj < n; jj += TJS)
        for (int ii = 0; ii < n; ii += TI) {
            ${UNROLL_I}
            for (int i = ii; i < MIN(ii + TI, n); i++) {
#if ${SCR}
                const double ri = r[i];
#define R_I ri
#else
#define R_I r[i]
#endif
                ${SIMD}
                ${UNROLL_J}
                for (int j = jj; j < MIN(jj + TJS, n); j++) s[j] += R_I * A[(size_t)i * n + j];
#undef R_I
            }
        }
}

static void reference(int n) {
    for (int i = 0; i < n; i++) {
        double acc = 0.0;
        for (int j = 0; j < n; j++) acc += A[(size_t)i * n + j] * p[j];
        Rq[i] = acc;
    }
    for (int j = 0; j < n; j++) {
        double acc = 0.0;
        for (int i = 0; i < n; i++) acc += r[i] * A[(size_t)i * n + j];
        Rs[j] = acc;
    }
}

static double error(int n) {
    double eq = rel_error(q, Rq, n), es = rel_error(s, Rs, n);
    return eq > es ? eq : es;
}

static double checksum(int n) { return sum(q, n) + sum(s, n); }
