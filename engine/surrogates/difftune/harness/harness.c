/*
 * Tunelab basic-block throughput harness (Linux x86-64, no PMU needed).
 *
 * Each job runs in its own forked child: the block is copied `unroll` times back-to-back into an
 * executable region, between a prologue that sets every general-purpose register to DATA_ADDR
 * (rsp/rbp to the middle of that page), clears the flags, sets MXCSR to FTZ|DAZ and reads
 * `lfence; rdtsc`, and an epilogue that reads `rdtscp; lfence` and returns to C.  A SIGSEGV on an
 * unmapped page maps that page onto the one shared physical page (a memfd) and restarts the block
 * from the prologue.  Per repetition the child records TSC ticks, context switches and minor+major
 * page faults (getrusage), so the caller can reject disturbed repetitions.
 *
 * Usage:
 *   difftune-harness [--cpu N] [--timeout-ms T]                     jobs "HEX UNROLL REPS" on stdin
 *   difftune-harness [--cpu N] [--timeout-ms T] HEX UNROLL REPS     one job
 *   difftune-harness [--cpu N] [--timeout-ms T] --calibrate N REPS  `add %rax,%rax` chains of 2N and N
 * Output: one JSON line per job (and a "ticks_per_cycle" line in calibration mode).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PAGE 4096UL
#define DATA_ADDR 0x2324000UL            /* every GPR and every qword of the data page */
#define STATE_ADDR 0x200000000000UL      /* harness bookkeeping, > 2 GiB from code and data */
#define CODE_ADDR 0x300000000000UL       /* the unrolled block */
#define MAX_FAULTS 1024
#define MAX_REPS 4096
#define MAX_CODE (64UL << 20)
#define MAX_WARMUP 64
#define MXCSR_RUN 0x9fc0u                /* all exceptions masked, FTZ, DAZ */
#define MXCSR_C 0x1f80u
#define CALIBRATION_BLOCK "4801c0"        /* add %rax,%rax */

enum status { ST_OK, ST_FAULT_LIMIT, ST_REFAULT, ST_MAP_FAIL, ST_WARMUP, ST_PROTECTION, ST_GENERAL };

/* Lives at STATE_ADDR; the generated code reaches it through 64-bit absolute addresses. */
struct state {
    uint64_t saved_rsp;     /* 0 */
    uint32_t mxcsr_run;     /* 8 */
    uint32_t pad0;
    uint32_t mxcsr_c;       /* 16 */
    uint32_t pad1;
    uint32_t start_lo, start_hi, end_lo, end_hi; /* 24, 28, 32, 36 */
};

/* What a child sends back through its pipe. */
struct result {
    int32_t status;
    int32_t n_maps;
    uint64_t fault_addr;
    int32_t n;
    uint64_t ticks[MAX_REPS];
    uint32_t csw[MAX_REPS];
    uint32_t flt[MAX_REPS];
};

static struct result g_res;
static uint64_t g_mapped[MAX_FAULTS];
static int g_memfd = -1;
static int g_out_fd = -1;
static uint8_t *g_restart;

/* ---- code generation ---------------------------------------------------------------------- */

static uint8_t *emit(uint8_t *p, const void *bytes, size_t n) { memcpy(p, bytes, n); return p + n; }

static uint8_t *emit_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); return p + 8; }

/* movabs $imm64, reg (reg 0..15) */
static uint8_t *emit_movabs(uint8_t *p, int reg, uint64_t imm) {
    *p++ = (uint8_t)(0x48 | (reg >= 8 ? 1 : 0));
    *p++ = (uint8_t)(0xb8 + (reg & 7));
    return emit_u64(p, imm);
}

/* movabs %eax, moffs64: stores eax without touching flags or any other register */
static uint8_t *emit_store_eax(uint8_t *p, uint64_t addr) { *p++ = 0xa3; return emit_u64(p, addr); }

static int has_avx(void) { __builtin_cpu_init(); return __builtin_cpu_supports("avx"); }

/* Prologue up to the restart point: save callee-saved registers and the C stack pointer. */
static uint8_t *emit_entry(uint8_t *p) {
    static const uint8_t push[] = {0x53, 0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57};
    p = emit(p, push, sizeof push);
    p = emit_movabs(p, 0, STATE_ADDR);
    static const uint8_t save_rsp[] = {0x48, 0x89, 0x20};            /* mov %rsp,(%rax) */
    return emit(p, save_rsp, sizeof save_rsp);
}

/* Restart point: the deterministic state, then the start timestamp, then the GPRs. */
static uint8_t *emit_restart(uint8_t *p, int avx) {
    struct state *s = (struct state *)STATE_ADDR;
    p = emit_movabs(p, 0, STATE_ADDR);
    static const uint8_t ldmxcsr_run[] = {0x0f, 0xae, 0x50, 0x08};   /* ldmxcsr 8(%rax) */
    p = emit(p, ldmxcsr_run, sizeof ldmxcsr_run);
    static const uint8_t fninit[] = {0xdb, 0xe3};
    p = emit(p, fninit, sizeof fninit);
    if (avx) { static const uint8_t vzeroall[] = {0xc5, 0xfc, 0x77}; p = emit(p, vzeroall, sizeof vzeroall); }
    p = emit_movabs(p, 4, DATA_ADDR + PAGE / 2);                     /* rsp */
    static const uint8_t clear_flags[] = {0x6a, 0x00, 0x9d};          /* push $0; popfq */
    p = emit(p, clear_flags, sizeof clear_flags);
    p = emit_movabs(p, 0, DATA_ADDR);
    static const uint8_t refill[] = {0x48, 0x89, 0x44, 0x24, 0xf8};  /* mov %rax,-8(%rsp) */
    p = emit(p, refill, sizeof refill);
    static const uint8_t lfence_rdtsc[] = {0x0f, 0xae, 0xe8, 0x0f, 0x31};
    p = emit(p, lfence_rdtsc, sizeof lfence_rdtsc);
    p = emit_store_eax(p, (uint64_t)&s->start_lo);
    static const uint8_t edx_to_eax[] = {0x89, 0xd0};
    p = emit(p, edx_to_eax, sizeof edx_to_eax);
    p = emit_store_eax(p, (uint64_t)&s->start_hi);
    for (int reg = 0; reg < 16; reg++)
        if (reg != 4) p = emit_movabs(p, reg, reg == 5 ? DATA_ADDR + PAGE / 2 : DATA_ADDR);
    return p;
}

/* Epilogue: the end timestamp, then back to C with its stack, MXCSR and callee-saved registers. */
static uint8_t *emit_exit(uint8_t *p, int avx) {
    struct state *s = (struct state *)STATE_ADDR;
    static const uint8_t rdtscp_lfence[] = {0x0f, 0x01, 0xf9, 0x0f, 0xae, 0xe8};
    p = emit(p, rdtscp_lfence, sizeof rdtscp_lfence);
    p = emit_store_eax(p, (uint64_t)&s->end_lo);
    static const uint8_t edx_to_eax[] = {0x89, 0xd0};
    p = emit(p, edx_to_eax, sizeof edx_to_eax);
    p = emit_store_eax(p, (uint64_t)&s->end_hi);
    if (avx) { static const uint8_t vzeroupper[] = {0xc5, 0xf8, 0x77}; p = emit(p, vzeroupper, sizeof vzeroupper); }
    p = emit_movabs(p, 0, STATE_ADDR);
    static const uint8_t back[] = {0x48, 0x8b, 0x20,                  /* mov (%rax),%rsp */
                                   0x0f, 0xae, 0x50, 0x10,            /* ldmxcsr 16(%rax) */
                                   0xdb, 0xe3,                        /* fninit */
                                   0xfc,                              /* cld */
                                   0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d, 0x41, 0x5c, 0x5d, 0x5b, 0xc3};
    return emit(p, back, sizeof back);
}

/* ---- the child -------------------------------------------------------------------------- */

static void send_and_exit(int status, uint64_t addr) {
    g_res.status = status;
    g_res.fault_addr = addr;
    const uint8_t *buf = (const uint8_t *)&g_res;
    size_t left = sizeof g_res;
    while (left > 0) {
        ssize_t w = write(g_out_fd, buf, left);
        if (w <= 0) break;
        buf += w;
        left -= (size_t)w;
    }
    _exit(0);
}

/* Map the faulting page onto the shared page and restart the block from its prologue; a fault that
 * mapping cannot cure (protection, non-canonical address) ends the job. */
static void on_segv(int sig, siginfo_t *info, void *ctx) {
    (void)sig;
    if (info->si_code == SEGV_ACCERR) send_and_exit(ST_PROTECTION, (uint64_t)info->si_addr);
    if (info->si_code != SEGV_MAPERR) send_and_exit(ST_GENERAL, (uint64_t)info->si_addr);
    uint64_t page = (uint64_t)info->si_addr & ~(PAGE - 1);
    for (int i = 0; i < g_res.n_maps; i++)
        if (g_mapped[i] == page) send_and_exit(ST_REFAULT, (uint64_t)info->si_addr);
    if (g_res.n_maps >= MAX_FAULTS) send_and_exit(ST_FAULT_LIMIT, (uint64_t)info->si_addr);
    void *m = mmap((void *)page, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, g_memfd, 0);
    if (m != (void *)page) send_and_exit(ST_MAP_FAIL, (uint64_t)info->si_addr);
    g_mapped[g_res.n_maps++] = page;
    ((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)g_restart;
}

static void die_setup(const char *what) { perror(what); _exit(2); }

static void setup_memory(const uint8_t *block, size_t len, long unroll, int avx) {
    g_memfd = memfd_create("difftune-page", 0);
    if (g_memfd < 0 || ftruncate(g_memfd, (off_t)PAGE) != 0) die_setup("memfd");
    void *data = mmap((void *)DATA_ADDR, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, g_memfd, 0);
    void *st = mmap((void *)STATE_ADDR, PAGE, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    size_t code_size = (len * (size_t)unroll + 4096 + PAGE - 1) & ~(PAGE - 1);
    uint8_t *code = mmap((void *)CODE_ADDR, code_size, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (data != (void *)DATA_ADDR || st != (void *)STATE_ADDR || code != (uint8_t *)CODE_ADDR) die_setup("mmap");
    struct state *s = st;
    s->mxcsr_run = MXCSR_RUN;
    s->mxcsr_c = MXCSR_C;
    uint8_t *p = emit_entry(code);
    g_restart = p;
    p = emit_restart(p, avx);
    for (long i = 0; i < unroll; i++) p = emit(p, block, len);
    emit_exit(p, avx);
    if (mprotect(code, code_size, PROT_READ | PROT_EXEC) != 0) die_setup("mprotect");
}

static void setup_signals(long timeout_ms) {
    static uint8_t altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGSEGV, &sa, NULL) != 0) die_setup("signals");
    struct itimerval it = {{0, 0}, {timeout_ms / 1000, (timeout_ms % 1000) * 1000}};
    if (setitimer(ITIMER_REAL, &it, NULL) != 0) die_setup("setitimer");
}

static void fill_data_page(void) {
    uint64_t *q = (uint64_t *)DATA_ADDR;
    for (size_t i = 0; i < PAGE / 8; i++) q[i] = DATA_ADDR;
}

struct usage { uint64_t csw, flt; };

static struct usage usage_now(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (struct usage){(uint64_t)(ru.ru_nvcsw + ru.ru_nivcsw), (uint64_t)(ru.ru_minflt + ru.ru_majflt)};
}

static uint64_t run_once(struct usage *delta) {
    struct state *s = (struct state *)STATE_ADDR;
    fill_data_page();
    struct usage a = usage_now();
    ((void (*)(void))CODE_ADDR)();
    struct usage b = usage_now();
    delta->csw = b.csw - a.csw;
    delta->flt = b.flt - a.flt;
    uint64_t start = ((uint64_t)s->start_hi << 32) | s->start_lo;
    uint64_t end = ((uint64_t)s->end_hi << 32) | s->end_lo;
    return end - start;
}

/* Warm up until a run maps no new page and takes no page fault, then record `reps` runs. */
static void child(const uint8_t *block, size_t len, long unroll, long reps, long timeout_ms, int out_fd) {
    g_out_fd = out_fd;
    int avx = has_avx();
    setup_signals(timeout_ms);
    setup_memory(block, len, unroll, avx);
    struct usage d;
    int warm = 0;
    for (int i = 0; i < MAX_WARMUP && !warm; i++) {
        int maps_before = g_res.n_maps;
        run_once(&d);
        warm = d.flt == 0 && g_res.n_maps == maps_before;
    }
    if (!warm) send_and_exit(ST_WARMUP, 0);
    for (long r = 0; r < reps; r++) {
        g_res.ticks[r] = run_once(&d);
        g_res.csw[r] = (uint32_t)d.csw;
        g_res.flt[r] = (uint32_t)d.flt;
    }
    g_res.n = (int32_t)reps;
    send_and_exit(ST_OK, 0);
}

/* ---- the parent ------------------------------------------------------------------------- */

static size_t read_all(int fd, void *buf, size_t size) {
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, (uint8_t *)buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

static const char *status_name(int st) {
    switch (st) {
    case ST_OK: return "ok";
    case ST_FAULT_LIMIT: return "fault: more than 1024 pages";
    case ST_REFAULT: return "fault: same page faulted twice";
    case ST_MAP_FAIL: return "fault: cannot map the faulting address";
    case ST_PROTECTION: return "fault: access to a protected page";
    case ST_GENERAL: return "fault: general protection (non-canonical address or privileged state)";
    default: return "fault: page faults do not stop after warm-up";
    }
}

static void print_u64s(const char *key, const void *values, int n, int wide) {
    printf(",\"%s\":[", key);
    for (int i = 0; i < n; i++)
        printf("%s%" PRIu64, i ? "," : "", wide ? ((const uint64_t *)values)[i] : ((const uint32_t *)values)[i]);
    printf("]");
}

static void print_job(const char *hex, long unroll, const char *status, const char *detail, const struct result *r) {
    printf("{\"hex\":\"%s\",\"unroll\":%ld,\"status\":\"%s\",\"detail\":\"%s\"", hex, unroll, status, detail);
    if (r) {
        printf(",\"maps\":%d,\"fault_addr\":%" PRIu64, r->n_maps, r->fault_addr);
        print_u64s("ticks", r->ticks, r->n, 1);
        print_u64s("csw", r->csw, r->n, 0);
        print_u64s("flt", r->flt, r->n, 0);
    }
    printf("}\n");
    fflush(stdout);
}

static int parse_hex(const char *hex, uint8_t *out, size_t cap, size_t *len) {
    size_t n = strlen(hex);
    if (n % 2 || n / 2 > cap) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1 || !strchr("0123456789abcdefABCDEF", hex[2 * i]) ||
            !strchr("0123456789abcdefABCDEF", hex[2 * i + 1]))
            return -1;
        out[i] = (uint8_t)v;
    }
    *len = n / 2;
    return 0;
}

/* Run one job in a fresh child and print its line; returns the minimum ticks (0 if none). */
static uint64_t run_job(const char *hex, long unroll, long reps, long timeout_ms) {
    static uint8_t block[1 << 16];
    size_t len = 0;
    if (parse_hex(hex, block, sizeof block, &len) != 0) { print_job(hex, unroll, "error", "bad hex", NULL); return 0; }
    if (unroll < 0 || reps < 1 || reps > MAX_REPS || len * (size_t)unroll > MAX_CODE) {
        print_job(hex, unroll, "error", "unroll or reps out of range", NULL);
        return 0;
    }
    int fds[2];
    if (pipe(fds) != 0) { perror("pipe"); exit(2); }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) { close(fds[0]); child(block, len, unroll, reps, timeout_ms, fds[1]); }
    close(fds[1]);
    static struct result r;
    memset(&r, 0, sizeof r);
    size_t got = read_all(fds[0], &r, sizeof r);
    close(fds[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (WIFSIGNALED(ws)) {
        int sig = WTERMSIG(ws);
        print_job(hex, unroll, sig == SIGALRM ? "timeout" : "fault", sig == SIGALRM ? "" : strsignal(sig), NULL);
        return 0;
    }
    if (got != sizeof r) { print_job(hex, unroll, "error", "child died during setup", NULL); return 0; }
    print_job(hex, unroll, r.status == ST_OK ? "ok" : "fault", r.status == ST_OK ? "" : status_name(r.status), &r);
    uint64_t best = 0;
    for (int i = 1; i < r.n; i++)
        if ((r.csw[i] | r.flt[i]) == 0 && (best == 0 || r.ticks[i] < best)) best = r.ticks[i];
    return best;
}

static void pin(long cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) { perror("sched_setaffinity"); exit(2); }
}

/* `add %rax,%rax` chains of 2N and N (1 cycle each; `add $1,%rax` is not: Golden Cove eliminates
 * immediate adds at rename and runs such a chain at ~4 per cycle); the difference cancels the overhead. */
static void calibrate(long n, long reps, long timeout_ms) {
    uint64_t t_a = run_job(CALIBRATION_BLOCK, 2 * n, reps, timeout_ms);
    uint64_t t_b = run_job(CALIBRATION_BLOCK, n, reps, timeout_ms);
    if (t_a > t_b && n > 0) printf("{\"ticks_per_cycle\":%.6f,\"n\":%ld}\n", (double)(t_a - t_b) / (double)n, n);
    else printf("{\"ticks_per_cycle\":null,\"n\":%ld}\n", n);
}

static void usage(void) {
    fprintf(stderr, "usage: difftune-harness [--cpu N] [--timeout-ms T] [HEX UNROLL REPS | --calibrate N REPS]\n");
    exit(2);
}

int main(int argc, char **argv) {
    long timeout_ms = 1000;
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0 && strcmp(argv[i], "--calibrate") != 0; i += 2) {
        if (strcmp(argv[i], "--cpu") == 0) pin(strtol(argv[i + 1], NULL, 10));
        else if (strcmp(argv[i], "--timeout-ms") == 0) timeout_ms = strtol(argv[i + 1], NULL, 10);
        else usage();
    }
    if (timeout_ms < 1) usage();
    if (argc - i == 3 && strcmp(argv[i], "--calibrate") == 0) {
        calibrate(strtol(argv[i + 1], NULL, 10), strtol(argv[i + 2], NULL, 10), timeout_ms);
        return 0;
    }
    if (argc - i == 3) { run_job(argv[i], strtol(argv[i + 1], NULL, 10), strtol(argv[i + 2], NULL, 10), timeout_ms); return 0; }
    if (argc != i) usage();
    char hex[1 << 17];
    long unroll, reps;
    while (scanf("%131071s %ld %ld", hex, &unroll, &reps) == 3) run_job(hex, unroll, reps, timeout_ms);
    return 0;
}
