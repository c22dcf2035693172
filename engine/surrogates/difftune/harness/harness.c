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
 * A block is data from anywhere, and any bytes can reach any instruction (a jump into an immediate),
 * so the child is treated as hostile from the moment a block runs.  The boundary is the kernel:
 *  - before the first block, the child closes every descriptor but its result pipe and the memfd,
 *    sets rlimits (CPU time, no file growth, no new descriptors, no core), PR_SET_NO_NEW_PRIVS, and
 *    a seccomp filter allowing only what the protocol needs: write to the result pipe, getrusage,
 *    the fault handler's mmap of the shared page, rt_sigreturn and exit.  Any other system call
 *    ends the job as "refused" with its number;
 *  - the saved stack pointer and return address live in a page that is read-only while blocks run,
 *    and the epilogue checks the return address before it returns to C; a block that writes there
 *    faults.  Timestamps live in a page of their own that a block may spoil (its own result only);
 *  - the parent trusts nothing the child sends beyond bounds it checks, and kills the child at the
 *    job's deadline by itself; the child dies with the parent (PR_SET_PDEATHSIG) and cannot fork.
 *
 * Usage:
 *   difftune-harness [--cpu N] [--timeout-ms T]                     jobs "HEX UNROLL REPS" on stdin
 *   difftune-harness [--cpu N] [--timeout-ms T] HEX UNROLL REPS     one job
 *   difftune-harness [--cpu N] [--timeout-ms T] --calibrate N REPS  `add %rax,%rax` chains of 2N and N
 * Output: one JSON line per job (and a "ticks_per_cycle" line in calibration mode).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef SECCOMP_FILTER_FLAG_SPEC_ALLOW
#define SECCOMP_FILTER_FLAG_SPEC_ALLOW (1UL << 2)
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

#define PAGE 4096UL
#define DATA_ADDR 0x2324000UL            /* every GPR and every qword of the data page */
#define STATE_ADDR 0x200000000000UL      /* saved stack and return address: read-only while blocks run */
#define CLOCK_ADDR (STATE_ADDR + PAGE)   /* the timestamps: writable, a block can only spoil its own */
#define CODE_ADDR 0x300000000000UL       /* the probe, then the entry, the unrolled block and the exit */
#define ENTRY_OFFSET 64                  /* the entry, after the probe */
#define MAX_FAULTS 1024
#define MAX_REPS 4096
#define MAX_CODE (64UL << 20)
#define MAX_WARMUP 64
#define MXCSR_RUN 0x9fc0u                /* all exceptions masked, FTZ, DAZ */
#define MXCSR_C 0x1f80u
#define CALIBRATION_BLOCK "4801c0"        /* add %rax,%rax */
#define RESULT_FD 3                      /* the child's descriptors once sandboxed */
#define MEMFD_FD 4

enum status { ST_OK, ST_FAULT_LIMIT, ST_REFAULT, ST_MAP_FAIL, ST_WARMUP, ST_PROTECTION, ST_GENERAL, ST_SYSCALL,
              ST_SETUP, ST_COUNT };

/* Lives at STATE_ADDR; the generated code reaches it through 64-bit absolute addresses. */
struct state {
    uint64_t saved_rsp;     /* 0: the C stack pointer at the entry, after its pushes */
    uint64_t return_to;     /* 8: the return address the epilogue must find on that stack */
    uint32_t mxcsr_run;     /* 16 */
    uint32_t mxcsr_c;       /* 20 */
    uint64_t restart;       /* 24: where the fault handler resumes */
};

/* Lives at CLOCK_ADDR. */
struct clock { uint32_t start_lo, start_hi, end_lo, end_hi; };

/* What a child sends back through its pipe. */
struct result {
    int32_t status;
    int32_t n_maps;
    uint64_t fault_addr;   /* or the system call's number (ST_SYSCALL), or errno (ST_SETUP) */
    int32_t n;
    uint64_t ticks[MAX_REPS];
    uint32_t csw[MAX_REPS];
    uint32_t flt[MAX_REPS];
};

static struct result g_res;
static uint64_t g_mapped[MAX_FAULTS];
static int g_memfd = -1;
static int g_out_fd = -1;

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

/* jne rel32 to `target` */
static uint8_t *emit_jne(uint8_t *p, const uint8_t *target) {
    *p++ = 0x0f;
    *p++ = 0x85;
    int32_t rel = (int32_t)(target - (p + 4));
    memcpy(p, &rel, 4);
    return p + 4;
}

static int has_avx(void) { __builtin_cpu_init(); return __builtin_cpu_supports("avx"); }

static const uint8_t PUSH_CALLEE_SAVED[] = {0x53, 0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57};
static const uint8_t POP_CALLEE_SAVED_RET[] = {0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d, 0x41, 0x5c, 0x5d, 0x5b, 0xc3};

/* The probe, called once from the same C call site as the runs while the state page is writable:
 * it records the stack pointer and return address every entry must then show. */
static uint8_t *emit_probe(uint8_t *p) {
    p = emit(p, PUSH_CALLEE_SAVED, sizeof PUSH_CALLEE_SAVED);
    p = emit_movabs(p, 0, STATE_ADDR);
    static const uint8_t record[] = {0x48, 0x89, 0x20,               /* mov %rsp,(%rax) */
                                     0x48, 0x8b, 0x4c, 0x24, 0x30,   /* mov 48(%rsp),%rcx */
                                     0x48, 0x89, 0x48, 0x08};        /* mov %rcx,8(%rax) */
    p = emit(p, record, sizeof record);
    return emit(p, POP_CALLEE_SAVED_RET, sizeof POP_CALLEE_SAVED_RET);
}

/* Entry: the callee-saved registers, then a check that the stack is the one the probe saw. */
static uint8_t *emit_entry(uint8_t *p, const uint8_t *trap) {
    p = emit(p, PUSH_CALLEE_SAVED, sizeof PUSH_CALLEE_SAVED);
    p = emit_movabs(p, 0, STATE_ADDR);
    static const uint8_t check_rsp[] = {0x48, 0x3b, 0x20};           /* cmp (%rax),%rsp */
    p = emit(p, check_rsp, sizeof check_rsp);
    return emit_jne(p, trap);
}

/* Restart point: the deterministic state, then the start timestamp, then the GPRs. */
static uint8_t *emit_restart(uint8_t *p, int avx) {
    struct clock *c = (struct clock *)CLOCK_ADDR;
    p = emit_movabs(p, 0, STATE_ADDR);
    static const uint8_t ldmxcsr_run[] = {0x0f, 0xae, 0x50, offsetof(struct state, mxcsr_run)}; /* ldmxcsr 16(%rax) */
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
    p = emit_store_eax(p, (uint64_t)&c->start_lo);
    static const uint8_t edx_to_eax[] = {0x89, 0xd0};
    p = emit(p, edx_to_eax, sizeof edx_to_eax);
    p = emit_store_eax(p, (uint64_t)&c->start_hi);
    for (int reg = 0; reg < 16; reg++)
        if (reg != 4) p = emit_movabs(p, reg, reg == 5 ? DATA_ADDR + PAGE / 2 : DATA_ADDR);
    return p;
}

/* Epilogue: the end timestamp, then back to C with its stack (from the read-only page, its return
 * address checked against the probe's), MXCSR and callee-saved registers. */
static uint8_t *emit_exit(uint8_t *p, int avx, const uint8_t *trap) {
    struct clock *c = (struct clock *)CLOCK_ADDR;
    static const uint8_t rdtscp_lfence[] = {0x0f, 0x01, 0xf9, 0x0f, 0xae, 0xe8};
    p = emit(p, rdtscp_lfence, sizeof rdtscp_lfence);
    p = emit_store_eax(p, (uint64_t)&c->end_lo);
    static const uint8_t edx_to_eax[] = {0x89, 0xd0};
    p = emit(p, edx_to_eax, sizeof edx_to_eax);
    p = emit_store_eax(p, (uint64_t)&c->end_hi);
    if (avx) { static const uint8_t vzeroupper[] = {0xc5, 0xf8, 0x77}; p = emit(p, vzeroupper, sizeof vzeroupper); }
    p = emit_movabs(p, 0, STATE_ADDR);
    static const uint8_t back[] = {0x48, 0x8b, 0x20,                  /* mov (%rax),%rsp */
                                   0x48, 0x8b, 0x4c, 0x24, 0x30,      /* mov 48(%rsp),%rcx */
                                   0x48, 0x3b, 0x48, 0x08};           /* cmp 8(%rax),%rcx */
    p = emit(p, back, sizeof back);
    p = emit_jne(p, trap);
    static const uint8_t restore[] = {0x0f, 0xae, 0x50, offsetof(struct state, mxcsr_c), /* ldmxcsr 20(%rax) */
                                      0xdb, 0xe3,                     /* fninit */
                                      0xfc};                          /* cld */
    p = emit(p, restore, sizeof restore);
    return emit(p, POP_CALLEE_SAVED_RET, sizeof POP_CALLEE_SAVED_RET);
}

/* ---- the child -------------------------------------------------------------------------- */

static void write_all(const void *bytes, size_t left) {
    const uint8_t *buf = bytes;
    while (left > 0) {
        ssize_t w = write(g_out_fd, buf, left);
        if (w <= 0) return;
        buf += w;
        left -= (size_t)w;
    }
}

/* The header, then only the `n` repetitions recorded (a few hundred bytes, not the whole arrays: a
 * job's cost is mostly its process, and every page either side touches after the fork is a copy). */
static void send_and_exit(int status, uint64_t addr) {
    g_res.status = status;
    g_res.fault_addr = addr;
    size_t n = g_res.n > 0 && g_res.n <= MAX_REPS ? (size_t)g_res.n : 0;
    write_all(&g_res, offsetof(struct result, ticks));
    write_all(g_res.ticks, n * sizeof g_res.ticks[0]);
    write_all(g_res.csw, n * sizeof g_res.csw[0]);
    write_all(g_res.flt, n * sizeof g_res.flt[0]);
    _exit(0);
}

/* Map the faulting page onto the shared page and restart the block from its prologue; a fault that
 * mapping cannot cure (protection, non-canonical address) ends the job. */
static void on_segv(int sig, siginfo_t *info, void *ctx) {
    (void)sig;
    if (info->si_code == SEGV_ACCERR) send_and_exit(ST_PROTECTION, (uint64_t)info->si_addr);
    if (info->si_code != SEGV_MAPERR) send_and_exit(ST_GENERAL, (uint64_t)info->si_addr);
    uint64_t page = (uint64_t)info->si_addr & ~(PAGE - 1);
    for (int i = 0; i < g_res.n_maps && i < MAX_FAULTS; i++)
        if (g_mapped[i] == page) send_and_exit(ST_REFAULT, (uint64_t)info->si_addr);
    if (g_res.n_maps < 0 || g_res.n_maps >= MAX_FAULTS) send_and_exit(ST_FAULT_LIMIT, (uint64_t)info->si_addr);
    void *m = mmap((void *)page, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, g_memfd, 0);
    if (m != (void *)page) send_and_exit(ST_MAP_FAIL, (uint64_t)info->si_addr);
    g_mapped[g_res.n_maps++] = page;
    ((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP] = (greg_t)((const struct state *)STATE_ADDR)->restart;
}

/* A system call outside the filter's list: report its number, never perform it. */
static void on_sigsys(int sig, siginfo_t *info, void *ctx) {
    (void)sig;
    (void)ctx;
    send_and_exit(ST_SYSCALL, (uint64_t)(uint32_t)info->si_syscall);
}

static void die_setup(void) { send_and_exit(ST_SETUP, (uint64_t)errno); }

static void setup_memory(const uint8_t *block, size_t len, long unroll, int avx) {
    g_memfd = memfd_create("difftune-page", MFD_CLOEXEC);
    if (g_memfd < 0 || ftruncate(g_memfd, (off_t)PAGE) != 0) die_setup();
    void *data = mmap((void *)DATA_ADDR, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, g_memfd, 0);
    void *st = mmap((void *)STATE_ADDR, 2 * PAGE, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    size_t code_size = (ENTRY_OFFSET + len * (size_t)unroll + 4096 + PAGE - 1) & ~(PAGE - 1);
    uint8_t *code = mmap((void *)CODE_ADDR, code_size, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (data != (void *)DATA_ADDR || st != (void *)STATE_ADDR || code != (uint8_t *)CODE_ADDR) die_setup();
    struct state *s = st;
    s->mxcsr_run = MXCSR_RUN;
    s->mxcsr_c = MXCSR_C;
    uint8_t *trap = code + code_size - 2;
    trap[0] = 0x0f;                                                    /* ud2: a tampered return path */
    trap[1] = 0x0b;
    emit_probe(code);
    uint8_t *p = emit_entry(code + ENTRY_OFFSET, trap);
    s->restart = (uint64_t)(uintptr_t)p;
    p = emit_restart(p, avx);
    for (long i = 0; i < unroll; i++) p = emit(p, block, len);
    emit_exit(p, avx, trap);
    if (mprotect(code, code_size, PROT_READ | PROT_EXEC) != 0) die_setup();
}

static void setup_signals(long timeout_ms) {
    static uint8_t altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sa.sa_sigaction = on_segv;
    if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGSEGV, &sa, NULL) != 0) die_setup();
    sa.sa_sigaction = on_sigsys;
    if (sigaction(SIGSYS, &sa, NULL) != 0) die_setup();
    struct itimerval it = {{0, 0}, {timeout_ms / 1000, (timeout_ms % 1000) * 1000}};
    if (setitimer(ITIMER_REAL, &it, NULL) != 0) die_setup();
}

/* The result pipe and the memfd at fixed numbers (the filter names them), every other descriptor closed. */
static void keep_only_own_descriptors(void) {
    int out = fcntl(g_out_fd, F_DUPFD_CLOEXEC, MEMFD_FD + 1), mem = fcntl(g_memfd, F_DUPFD_CLOEXEC, MEMFD_FD + 1);
    if (out < 0 || mem < 0 || dup2(out, RESULT_FD) < 0 || dup2(mem, MEMFD_FD) < 0) die_setup();
    g_out_fd = RESULT_FD;
    g_memfd = MEMFD_FD;
    if (syscall(SYS_close_range, MEMFD_FD + 1, ~0U, 0) != 0) {
        struct rlimit r;
        long top = getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < 65536 ? (long)r.rlim_cur : 65536;
        for (long fd = MEMFD_FD + 1; fd < top; fd++) close((int)fd);
    }
    for (int fd = 0; fd < RESULT_FD; fd++) close(fd);
}

static void limit(int resource, rlim_t value) {
    struct rlimit r = {value, value};
    if (setrlimit(resource, &r) != 0) die_setup();
}

/* The seccomp program: exit, rt_sigreturn, getrusage, write to the result pipe, and the fault handler's
 * mmap of the shared page (read-write, never executable, never replacing a mapping); any other call
 * traps (SIGSYS: reported, not run), another ABI kills.  Short on purpose: installing a filter costs
 * the kernel time per instruction, and every job's child installs it. */
#define LD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define LD_ARG(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args) + 8 * (i)) /* low half */
#define IF(value, yes, no) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (value), (yes), (no))
#define RET(action) BPF_STMT(BPF_RET | BPF_K, (action))

static void install_filter(void) {
    struct sock_filter code[] = {
        /* 0 */ LD(arch),
        /* 1 */ IF(AUDIT_ARCH_X86_64, 0, 18),                                 /* -> 20 kill */
        /* 2 */ LD(nr),
        /* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 16, 0),    /* x32 -> 20 kill */
        /* 4 */ IF(SYS_exit_group, 13, 0),                                   /* -> 18 allow */
        /* 5 */ IF(SYS_exit, 12, 0),
        /* 6 */ IF(SYS_rt_sigreturn, 11, 0),
        /* 7 */ IF(SYS_getrusage, 10, 0),
        /* 8 */ IF(SYS_write, 0, 2),                                         /* -> 11 */
        /* 9 */ LD_ARG(0),
        /* 10 */ IF(RESULT_FD, 7, 8),                                        /* fd: an int, its low half */
        /* 11 */ IF(SYS_mmap, 0, 7),                                         /* -> 19 trap */
        /* 12 */ LD_ARG(2),
        /* 13 */ IF(PROT_READ | PROT_WRITE, 0, 5),                           /* prot: only these bits count */
        /* 14 */ LD_ARG(3),
        /* 15 */ IF(MAP_SHARED | MAP_FIXED_NOREPLACE, 0, 3),
        /* 16 */ LD_ARG(4),
        /* 17 */ IF(MEMFD_FD, 0, 1),
        /* 18 */ RET(SECCOMP_RET_ALLOW),
        /* 19 */ RET(SECCOMP_RET_TRAP),
        /* 20 */ RET(SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof code / sizeof code[0]), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die_setup();
    /* SPEC_ALLOW: kernels before 5.16 would otherwise turn on speculative-store-bypass mitigations for a
     * seccomp'd task, and time every block with them (nothing in the child is secret) */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, &prog) != 0 &&
        (errno != EINVAL || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0))
        die_setup();
}

/* Everything a block could use to reach beyond its own result is shut before the first one runs. */
static void enter_sandbox(long timeout_ms) {
    if (mprotect((void *)STATE_ADDR, PAGE, PROT_READ) != 0) die_setup();
    keep_only_own_descriptors();
    limit(RLIMIT_CPU, (rlim_t)(timeout_ms / 1000 + 2));
    limit(RLIMIT_FSIZE, 0);
    limit(RLIMIT_NOFILE, MEMFD_FD + 1);
    limit(RLIMIT_CORE, 0);
    limit(RLIMIT_NPROC, 0);
    install_filter();
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

/* The one call site of the generated code: the probe and every run enter through run_once from
 * child(), so the entry sees the stack pointer and return address the probe recorded (a compiler that
 * broke this would make every block fault at the entry's check, never run one unchecked). */
static void __attribute__((noinline, noclone)) call_code(uint64_t target) {
    ((void (*)(void))target)();
    __asm__ volatile("" ::: "memory");                               /* no tail call: the return stays here */
}

static uint64_t __attribute__((noinline, noclone)) run_once(uint64_t target, struct usage *delta) {
    const struct clock *c = (const struct clock *)CLOCK_ADDR;
    fill_data_page();
    struct usage a = usage_now();
    call_code(target);
    struct usage b = usage_now();
    delta->csw = b.csw - a.csw;
    delta->flt = b.flt - a.flt;
    uint64_t start = ((uint64_t)c->start_hi << 32) | c->start_lo;
    uint64_t end = ((uint64_t)c->end_hi << 32) | c->end_lo;
    return end - start;
}

/* Sandbox, warm up until a run maps no new page and takes no page fault, then record `reps` runs. */
static void child(const uint8_t *block, size_t len, long unroll, long reps, long timeout_ms, int out_fd, pid_t parent) {
    g_out_fd = out_fd;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(3);
    int avx = has_avx();
    setup_signals(timeout_ms);
    setup_memory(block, len, unroll, avx);
    struct usage d;
    run_once(CODE_ADDR, &d);                                           /* the probe */
    enter_sandbox(timeout_ms);
    int warm = 0;
    for (int i = 0; i < MAX_WARMUP && !warm; i++) {
        int maps_before = g_res.n_maps;
        run_once(CODE_ADDR + ENTRY_OFFSET, &d);
        warm = d.flt == 0 && g_res.n_maps == maps_before;
    }
    if (!warm) send_and_exit(ST_WARMUP, 0);
    for (long r = 0; r < reps; r++) {
        g_res.ticks[r] = run_once(CODE_ADDR + ENTRY_OFFSET, &d);
        g_res.csw[r] = (uint32_t)d.csw;
        g_res.flt[r] = (uint32_t)d.flt;
    }
    g_res.n = (int32_t)reps;
    send_and_exit(ST_OK, 0);
}

/* ---- the parent ------------------------------------------------------------------------- */

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Read up to `size` bytes until EOF or the deadline; sets *late when the deadline passed first, and
 * *extra when the child sent more than a result. */
static size_t read_until(int fd, void *buf, size_t size, long deadline, int *late, int *extra) {
    size_t got = 0;
    *late = *extra = 0;
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0) { *late = 1; return got; }
        struct pollfd pfd = {fd, POLLIN, 0};
        int ready = poll(&pfd, 1, (int)left);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        uint8_t spill;
        ssize_t r = got < size ? read(fd, (uint8_t *)buf + got, size - got) : read(fd, &spill, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return got;
        if (got >= size) { *extra = 1; return got; }
        got += (size_t)r;
    }
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

/* A result the child sent (`got` bytes of `raw`), judged by the parent alone: the header's numbers must
 * fit the job and the repetitions that follow must be exactly the header's count. */
static int unpack(const uint8_t *raw, size_t got, long reps, struct result *r) {
    const size_t header = offsetof(struct result, ticks);
    if (got < header) return 0;
    memcpy(r, raw, header);
    if (r->status < 0 || r->status >= ST_COUNT || r->n_maps < 0 || r->n_maps > MAX_FAULTS) return 0;
    if (r->status == ST_OK ? r->n != reps : r->n != 0) return 0;
    size_t n = (size_t)r->n;
    if (got != header + n * (sizeof r->ticks[0] + sizeof r->csw[0] + sizeof r->flt[0])) return 0;
    raw += header;
    memcpy(r->ticks, raw, n * sizeof r->ticks[0]);
    memcpy(r->csw, raw + n * sizeof r->ticks[0], n * sizeof r->csw[0]);
    memcpy(r->flt, raw + n * (sizeof r->ticks[0] + sizeof r->csw[0]), n * sizeof r->flt[0]);
    return 1;
}

/* Run one job in a fresh child and print its line; returns the minimum ticks (0 if none). */
static uint64_t run_job(const char *hex, long unroll, long reps, long timeout_ms) {
    static uint8_t block[1 << 16];
    size_t len = 0;
    if (parse_hex(hex, block, sizeof block, &len) != 0) { print_job("", unroll, "error", "bad hex", NULL); return 0; }
    if (unroll < 0 || reps < 1 || reps > MAX_REPS || len * (size_t)unroll > MAX_CODE) {
        print_job(hex, unroll, "error", "unroll or reps out of range", NULL);
        return 0;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) { perror("pipe"); exit(2); }
    fflush(stdout);
    long deadline = now_ms() + timeout_ms;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) { close(fds[0]); child(block, len, unroll, reps, timeout_ms, fds[1], parent); }
    close(fds[1]);
    static uint8_t raw[sizeof(struct result)];
    static struct result r;
    int late = 0, extra = 0;
    size_t got = read_until(fds[0], raw, sizeof raw, deadline, &late, &extra);
    close(fds[0]);
    if (late) kill(pid, SIGKILL);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
    if (late || (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGALRM)) { print_job(hex, unroll, "timeout", "", NULL); return 0; }
    if (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGSYS) {
        print_job(hex, unroll, "refused", "a system call outside the sandbox (killed by seccomp)", NULL);
        return 0;
    }
    if (WIFSIGNALED(ws)) { print_job(hex, unroll, "fault", strsignal(WTERMSIG(ws)), NULL); return 0; }
    if (extra || !unpack(raw, got, reps, &r)) {
        print_job(hex, unroll, got == 0 ? "error" : "fault", got == 0 ? "child died during setup"
                  : "the child sent a malformed result", NULL);
        return 0;
    }
    if (r.status == ST_SYSCALL) {
        char detail[96];
        snprintf(detail, sizeof detail, "system call %" PRIu64 " stopped by the sandbox", r.fault_addr);
        print_job(hex, unroll, "refused", detail, NULL);
        return 0;
    }
    if (r.status == ST_SETUP) {
        char detail[128];
        snprintf(detail, sizeof detail, "sandbox setup failed: %s", strerror((int)r.fault_addr));
        print_job(hex, unroll, "error", detail, NULL);
        return 0;
    }
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
    if (timeout_ms < 1 || timeout_ms > 3600L * 1000) usage();
    if (argc - i == 3 && strcmp(argv[i], "--calibrate") == 0) {
        calibrate(strtol(argv[i + 1], NULL, 10), strtol(argv[i + 2], NULL, 10), timeout_ms);
        return 0;
    }
    if (argc - i == 3) { run_job(argv[i], strtol(argv[i + 1], NULL, 10), strtol(argv[i + 2], NULL, 10), timeout_ms); return 0; }
    if (argc != i) usage();
    static char hex[1 << 17];
    long unroll, reps;
    while (scanf("%131071s %ld %ld", hex, &unroll, &reps) == 3) run_job(hex, unroll, reps, timeout_ms);
    return 0;
}
