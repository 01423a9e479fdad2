/*
 * test-unwind: checks mt_unwind() (src/capture/shim/unwind_x86_64.c, compiled in)
 * against libunwind's unw_backtrace() frame by frame, and against the
 * functions expected on the stack (by dladdr).
 *
 * Built with -O2 -fomit-frame-pointer -fasynchronous-unwind-tables and
 * -rdynamic.  Usage: test-unwind LIB_A LIB_B (two builds of
 * unwind_test_lib.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "capture/shim/unwind.h"

#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

#define MAXF 128

struct trace {
    int n;
    uint64_t pc[MAXF];
};

struct ctx {
    struct trace mine, ref;
    int captured;
};

static __thread struct ctx *t_ctx;
static int g_failures;
static const char *g_lib_a, *g_lib_b;
typedef int (*unw_cb)(int);
typedef int (*lib_fn)(unw_cb, int);
static lib_fn g_lib_f5a;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            __atomic_add_fetch(&g_failures, 1, __ATOMIC_RELAXED);           \
        }                                                                   \
    } while (0)

/* Both unwinders from the same point: mine[i] is the return address into
 * capture()'s caller's caller...; unw_backtrace's first entry is the address
 * in capture() itself, so it is dropped. */
NOIPA void capture(struct ctx *c)
{
    void *b[MAXF + 1];
    c->mine.n = mt_unwind(c->mine.pc, MAXF, 0);
    int k = unw_backtrace(b, MAXF + 1);
    c->ref.n = k > 0 ? k - 1 : 0;
    for (int i = 1; i < k; i++)
        c->ref.pc[i - 1] = (uint64_t)(uintptr_t)b[i];
    c->captured++;
    __asm__ volatile("" ::: "memory");
}

static const char *sym(uint64_t pc, char *buf, size_t len)
{
    Dl_info d;
    memset(&d, 0, sizeof d);
    if (!dladdr((void *)(uintptr_t)(pc - 1), &d))
        memset(&d, 0, sizeof d);
    if (d.dli_sname)
        snprintf(buf, len, "%s+%#lx", d.dli_sname,
                 (unsigned long)(pc - (uint64_t)(uintptr_t)d.dli_saddr));
    else if (d.dli_fname)
        snprintf(buf, len, "%s@%#lx", strrchr(d.dli_fname, '/') ? strrchr(d.dli_fname, '/') + 1 : d.dli_fname,
                 (unsigned long)(pc - (uint64_t)(uintptr_t)d.dli_fbase));
    else
        snprintf(buf, len, "%#lx", (unsigned long)pc);
    return buf;
}

static int sym_is(uint64_t pc, const char *name)
{
    Dl_info d;
    return dladdr((void *)(uintptr_t)(pc - 1), &d) && d.dli_sname
           && strcmp(d.dli_sname, name) == 0;
}

static void dump(const char *what, const struct trace *t)
{
    char b[256];
    fprintf(stderr, "  %s (%d frames):\n", what, t->n);
    for (int i = 0; i < t->n; i++)
        fprintf(stderr, "    #%d %#lx %s\n", i, (unsigned long)t->pc[i],
                sym(t->pc[i], b, sizeof b));
}

static int same_trace(const struct trace *a, const struct trace *b)
{
    return a->n == b->n && memcmp(a->pc, b->pc, sizeof(uint64_t) * (size_t)a->n) == 0;
}

static void expect_equal(const char *what, const struct ctx *c)
{
    CHECK(c->captured, "%s: nothing captured", what);
    CHECK(c->mine.n > 0, "%s: empty trace", what);
    if (!same_trace(&c->mine, &c->ref)) {
        CHECK(0, "%s: mt_unwind differs from unw_backtrace", what);
        dump("mt_unwind", &c->mine);
        dump("unw_backtrace", &c->ref);
    }
}

/* Checks that NAMES appear at the start of T in order. */
static void expect_names(const char *what, const struct trace *t, const char *const *names)
{
    char b[256];
    for (int i = 0; names[i]; i++) {
        if (i >= t->n) {
            CHECK(0, "%s: frame #%d missing, expected %s", what, i, names[i]);
            return;
        }
        if (!sym_is(t->pc[i], names[i])) {
            CHECK(0, "%s: frame #%d is %s, expected %s", what, i,
                  sym(t->pc[i], b, sizeof b), names[i]);
            dump("mt_unwind", t);
            return;
        }
    }
}

static int find_name(const struct trace *t, int from, const char *name)
{
    for (int i = from; i < t->n; i++)
        if (sym_is(t->pc[i], name))
            return i;
    return -1;
}

/* ---- the main chain: f1 -> ... -> f4 -> lib_f5a -> lib_f5b -> f6 -> f7 -> f8 */

static volatile int sink;

NOIPA int f8(int n)
{
    capture(t_ctx);
    return n + sink + 1;
}

/* Realigned frame in the executable too. */
NOIPA __attribute__((force_align_arg_pointer)) int f7(int n)
{
    _Alignas(32) volatile char v[32];
    v[0] = (char)n;
    return f8(n + v[0] - (char)n) + 1;
}

NOIPA int f6(int n)
{
    return f7(n) + 1;
}

NOIPA int f4(int n)
{
    return g_lib_f5a(f6, n) + 1;
}

/* alloca: gcc keeps rbp as frame pointer here. */
NOIPA int f3(int n)
{
    volatile char *p = alloca((size_t)n * 100 + 1);
    p[0] = (char)n;
    return f4(p[0]) + 1;
}

/* Big stack frame. */
NOIPA int f2(int n)
{
    volatile char buf[200000];
    buf[n] = (char)n;
    buf[sizeof buf - 1] = 1;
    return f3(buf[n]) + buf[sizeof buf - 1];
}

NOIPA int f1(int n)
{
    return f2(n) + 1;
}

static const char *const chain_names[] = {
    "f8", "f7", "f6", "lib_f5b", "lib_f5a", "f4", "f3", "f2", "f1", "run_chain", NULL,
};

NOIPA int run_chain(struct ctx *c)
{
    memset(c, 0, sizeof *c);
    t_ctx = c;
    int r = f1(5);
    t_ctx = NULL;
    return r;
}

static void test_chain(const char *what, int through_main)
{
    struct ctx c;
    run_chain(&c);
    expect_equal(what, &c);
    expect_names(what, &c.mine, chain_names);
    if (through_main) {
        int m = find_name(&c.mine, 0, "main");
        CHECK(m > 0, "%s: main not reached", what);
        if (m > 0)
            CHECK(c.mine.n >= m + 2, "%s: stops at main (%d frames)", what, c.mine.n);
        CHECK(find_name(&c.mine, 0, "__libc_start_main") > m, "%s: __libc_start_main not reached", what);
    }
}

/* ---- skip and max */

NOIPA void capture_skip(void)
{
    uint64_t full[MAXF], part[MAXF];
    int n = mt_unwind(full, MAXF, 0);
    for (int skip = 0; skip < n + 2; skip++) {
        for (int max = 0; max < 5; max++) {
            memset(part, 0, sizeof part);
            int k = mt_unwind(part, max, skip);
            int want = n - skip < max ? n - skip : max;
            if (want < 0)
                want = 0;
            CHECK(k == want, "skip %d max %d: %d frames, expected %d", skip, max, k, want);
            CHECK(memcmp(part, full + skip, sizeof(uint64_t) * (size_t)(k > 0 ? k : 0)) == 0,
                  "skip %d max %d: wrong frames", skip, max);
            CHECK(part[k < MAXF ? k : 0] == 0 || k == 0, "skip %d max %d: wrote past the end", skip, max);
        }
    }
    sink++;
}

NOIPA void skip_outer(void)
{
    capture_skip();
    sink++;
}

/* ---- qsort: callbacks from libc code without frame pointers */

static int g_qsort_captured;
static struct ctx g_qsort_ctx;

NOIPA int qsort_cmp(const void *a, const void *b)
{
    if (!g_qsort_captured) {
        g_qsort_captured = 1;
        capture(&g_qsort_ctx);
    }
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

NOIPA void do_qsort(void)
{
    int v[200];
    for (int i = 0; i < 200; i++)
        v[i] = (i * 7919) % 211;
    qsort(v, 200, sizeof v[0], qsort_cmp);
    sink += v[0];
}

static void test_qsort(void)
{
    do_qsort();
    expect_equal("qsort", &g_qsort_ctx);
    const struct trace *t = &g_qsort_ctx.mine;
    CHECK(t->n > 1 && sym_is(t->pc[0], "qsort_cmp") && !sym_is(t->pc[1], "do_qsort"),
          "qsort: expected qsort_cmp, then libc");
    int q = find_name(t, 0, "do_qsort");
    CHECK(q > 0, "qsort: do_qsort not reached through libc");
    CHECK(find_name(t, q > 0 ? q : 0, "main") > q, "qsort: main not reached");
}

/* ---- threads, with the cache flushed concurrently */

static int g_stop_flusher;

static void *flusher(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&g_stop_flusher, __ATOMIC_RELAXED)) {
        mt_unwind_modules_changed();
        usleep(200);
    }
    return NULL;
}

NOIPA void *thread_main(void *arg)
{
    int iters = (int)(intptr_t)arg;
    for (int i = 0; i < iters; i++) {
        struct ctx c;
        run_chain(&c);
        if (!same_trace(&c.mine, &c.ref)) {
            expect_equal("thread", &c);
            break;
        }
        if (i == 0) {
            expect_names("thread", &c.mine, chain_names);
            CHECK(find_name(&c.mine, 0, "thread_main") == 10, "thread: thread_main not after run_chain");
        }
    }
    return NULL;
}

static void test_threads(void)
{
    enum { N = 8 };
    pthread_t th[N], fl;
    pthread_create(&fl, NULL, flusher, NULL);
    for (int i = 0; i < N; i++)
        pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)1000);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    __atomic_store_n(&g_stop_flusher, 1, __ATOMIC_RELAXED);
    pthread_join(fl, NULL);

    /* small thread stack: the readable-range probing must cope */
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 512 * 1024);
    pthread_create(&th[0], &a, thread_main, (void *)(intptr_t)10);
    pthread_join(th[0], NULL);
    pthread_attr_destroy(&a);
}

/* ---- signals */

static struct ctx g_sig_ctx;

static void sig_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig; (void)si; (void)uc;
    capture(&g_sig_ctx);
}

NOIPA int sig_raise(int n)
{
    raise(SIGUSR1);
    return n + sink + 1;
}

NOIPA int sig_outer(int n)
{
    return sig_raise(n) + 1;
}

static void test_signal(int altstack)
{
    const char *what = altstack ? "signal on altstack" : "signal";
    struct sigaction sa;
    stack_t ss, old_ss;
    void *alt = NULL;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sig_handler;
    sa.sa_flags = SA_SIGINFO | (altstack ? SA_ONSTACK : 0);
    sigemptyset(&sa.sa_mask);
    if (altstack) {
        alt = mmap(NULL, 256 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ss.ss_sp = alt;
        ss.ss_size = 256 * 1024;
        ss.ss_flags = 0;
        sigaltstack(&ss, &old_ss);
    }
    sigaction(SIGUSR1, &sa, NULL);
    memset(&g_sig_ctx, 0, sizeof g_sig_ctx);
    sig_outer(1);
    const struct trace *t = &g_sig_ctx.mine;
    CHECK(g_sig_ctx.captured, "%s: handler did not run", what);
    CHECK(t->n >= 1 && g_sig_ctx.ref.n >= 1 && t->pc[0] == g_sig_ctx.ref.pc[0],
          "%s: first frame (the sigreturn trampoline) wrong", what);
    if (!altstack) {
        /* through the signal frame, on to main */
        expect_equal(what, &g_sig_ctx);
        int s = find_name(t, 0, "sig_raise");
        CHECK(s > 1, "%s: sig_raise not found past the signal frame", what);
        CHECK(find_name(t, 0, "sig_outer") == s + 1, "%s: sig_outer does not follow sig_raise", what);
        CHECK(find_name(t, 0, "main") > s, "%s: main not reached", what);
    } else {
        /* may stop at the signal frame; whatever it gives must be right */
        CHECK(t->n <= g_sig_ctx.ref.n
              && memcmp(t->pc, g_sig_ctx.ref.pc, sizeof(uint64_t) * (size_t)t->n) == 0,
              "%s: frames differ from unw_backtrace", what);
        if (t->n != g_sig_ctx.ref.n) {
            printf("  %s: stopped after %d of %d frames\n", what, t->n, g_sig_ctx.ref.n);
        }
        ss.ss_flags = SS_DISABLE;
        sigaltstack(&old_ss, NULL);
        munmap(alt, 256 * 1024);
    }
    signal(SIGUSR1, SIG_DFL);
}

/* ---- asynchronous signals at arbitrary instructions */

#define NPROF 4000
static struct trace *g_prof_mine, *g_prof_ref;
static volatile int g_nprof;

static void prof_handler(int sig)
{
    (void)sig;
    int i = g_nprof;
    if (i >= NPROF)
        return;
    void *b[MAXF + 1];
    g_prof_mine[i].n = mt_unwind(g_prof_mine[i].pc, MAXF, 0);
    int k = unw_backtrace(b, MAXF + 1);
    g_prof_ref[i].n = k > 0 ? k - 1 : 0;
    for (int j = 1; j < k; j++)
        g_prof_ref[i].pc[j - 1] = (uint64_t)(uintptr_t)b[j];
    g_nprof = i + 1;
}

NOIPA long busy_fib(int n)
{
    return n < 2 ? n : busy_fib(n - 1) + busy_fib(n - 2);
}

NOIPA int busy_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Calls through the PLT, so that some samples land in PLT stubs, whose CFA
 * the linker describes with an expression. */
NOIPA int call_plt(void)
{
    return *__errno_location();
}

NOIPA void busy_work(int round)
{
    for (int i = 0; i < 3000; i++)
        sink += call_plt();
    int v[512];
    char src[4096], dst[4096];
    for (int i = 0; i < 512; i++)
        v[i] = (i * 7919 + round) % 1021;
    qsort(v, 512, sizeof v[0], busy_cmp);
    memset(src, round, sizeof src);
    memcpy(dst, src, sizeof dst);
    sink += v[3] + dst[100] + (int)busy_fib(18);
    struct ctx c;
    if (round % 64 == 0)
        run_chain(&c);
}

static void test_async_signals(void)
{
    g_prof_mine = mmap(NULL, sizeof(struct trace) * NPROF, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_prof_ref = mmap(NULL, sizeof(struct trace) * NPROF, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = prof_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    /* a CLOCK_MONOTONIC timer is a high-resolution one: 10 kHz */
    timer_t tm;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGPROF;
    struct itimerspec its = { { 0, 97000 }, { 0, 97000 } };
    if (timer_create(CLOCK_MONOTONIC, &sev, &tm) != 0 || timer_settime(tm, 0, &its, NULL) != 0) {
        CHECK(0, "timer_create failed");
        return;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int round = 0; g_nprof < NPROF; round++) {
        busy_work(round);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec > 20)
            break;
    }
    timer_delete(tm);
    signal(SIGPROF, SIG_DFL);

    int n = g_nprof, same = 0, reach_main = 0, ref_main = 0, shown = 0;
    for (int i = 0; i < n; i++) {
        const struct trace *m = &g_prof_mine[i], *r = &g_prof_ref[i];
        int mm = find_name(m, 0, "main") >= 0, rm = find_name(r, 0, "main") >= 0;
        same += same_trace(m, r);
        reach_main += mm;
        ref_main += rm;
        /* a trace that libunwind completes must be complete and identical */
        if (rm && !same_trace(m, r) && shown++ < 3) {
            CHECK(0, "async sample %d: differs from unw_backtrace", i);
            dump("mt_unwind", m);
            dump("unw_backtrace", r);
        }
    }
    printf("  async signals: %d samples, %d identical to unw_backtrace, "
           "main reached by mt_unwind %d, by unw_backtrace %d\n",
           n, same, reach_main, ref_main);
    CHECK(n >= 100, "too few samples (%d)", n);
    CHECK(reach_main >= ref_main, "mt_unwind reached main less often than libunwind");
    munmap(g_prof_mine, sizeof(struct trace) * NPROF);
    munmap(g_prof_ref, sizeof(struct trace) * NPROF);
}

/* ---- garbage stacks: must never crash */

struct code_range {
    uintptr_t start, end;
};
static struct code_range g_code[64];
static int g_ncode;

static int collect_code(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size; (void)arg;
    for (int i = 0; i < info->dlpi_phnum && g_ncode < 64; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            g_code[g_ncode].start = info->dlpi_addr + ph->p_vaddr;
            g_code[g_ncode].end = g_code[g_ncode].start + ph->p_memsz;
            g_ncode++;
        }
    }
    return 0;
}

static uint64_t rnd_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* Calls mt_unwind with rsp and rbp pointing into FAKE_SP's region: the
 * rule of this function's own call site is applied to the fake stack, and
 * from there on every return address, saved rbp and ucontext is garbage. */
NOIPA int unwind_on(uintptr_t fake_sp, uintptr_t fake_bp, uint64_t *pcs, int max)
{
    long n;
    __asm__ volatile(
        "mov %%rsp, %%r12\n\t"
        "mov %%rbp, %%r13\n\t"
        "mov %[sp], %%rsp\n\t"
        "mov %[bp], %%rbp\n\t"
        "call mt_unwind\n\t"
        "mov %%r12, %%rsp\n\t"
        "mov %%r13, %%rbp\n\t"
        : "=a"(n), "+D"(pcs), "+S"(max)
        : [sp] "r"(fake_sp), [bp] "r"(fake_bp), "d"(0)
        : "rcx", "r8", "r9", "r10", "r11", "r12", "r13", "memory", "cc",
          "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
          "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    return (int)n;
}

static void test_garbage(uint64_t sigreturn_pc)
{
    enum { SIZE = 64 * 1024, TRIALS = 20000, MAXG = 32 };
    dl_iterate_phdr(collect_code, NULL);
    char *buf = mmap(NULL, SIZE + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(buf + SIZE, 4096, PROT_NONE);      /* reading past the top faults */
    uintptr_t top = (uintptr_t)buf + SIZE;
    uint64_t *words = (uint64_t *)(top - 8192);
    long total = 0, longest = 0;
    for (int t = 0; t < TRIALS; t++) {
        for (int i = 0; i < 1024; i++) {
            uint64_t r = rnd(), v;
            switch (r % 16) {
            case 0: case 1: case 2: case 3: case 4: case 5: {
                const struct code_range *c = &g_code[(r >> 8) % (uint64_t)g_ncode];
                v = c->start + (rnd() % (c->end - c->start));
                break;
            }
            case 6: case 7: case 8: case 9:
                v = top - 8192 + (rnd() % 8200);        /* into the stack, or just past */
                break;
            case 10:
                v = sigreturn_pc;
                break;
            case 11:
                v = 0;
                break;
            default:
                v = rnd() >> (r % 64);
                break;
            }
            words[i] = v;
        }
        uintptr_t sp = (top - 4096 - (rnd() % 4000)) & ~(uintptr_t)15;
        uintptr_t bp = rnd() % 2 ? top - (rnd() % 8192) : rnd();
        uint64_t pcs[MAXG];
        int n = unwind_on(sp, bp, pcs, MAXG);
        if (n < 0 || n > MAXG) {
            CHECK(0, "garbage trial %d: returned %d", t, n);
            break;
        }
        total += n;
        if (n > longest)
            longest = n;
    }
    printf("  garbage stacks: %d trials, %.2f frames on average, longest %ld\n",
           TRIALS, (double)total / TRIALS, longest);
    munmap(buf, SIZE + 4096);
}

/* ---- dlopen / dlclose */

static void *load_lib(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        exit(2);
    }
    g_lib_f5a = (lib_fn)dlsym(h, "lib_f5a");
    if (!g_lib_f5a) {
        fprintf(stderr, "dlsym lib_f5a: %s\n", dlerror());
        exit(2);
    }
    return h;
}

static void test_reload(void **h)
{
    uintptr_t a_addr = (uintptr_t)g_lib_f5a;
    dlclose(*h);
    mt_unwind_modules_changed();
    *h = load_lib(g_lib_b);
    printf("  reload: lib_f5a of A at %#lx, of B at %#lx\n", (unsigned long)a_addr,
           (unsigned long)(uintptr_t)g_lib_f5a);
    test_chain("chain in lib B", 1);
    dlclose(*h);
    mt_unwind_modules_changed();
    *h = load_lib(g_lib_a);
    test_chain("chain in lib A again", 1);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIB_A LIB_B\n", argv[0]);
        return 2;
    }
    g_lib_a = argv[1];
    g_lib_b = argv[2];

    /* one unwind before the library is loaded: its module must then be
     * found without mt_unwind_modules_changed() */
    skip_outer();
    void *h = load_lib(g_lib_a);

    printf("chain (cold)\n");
    test_chain("chain cold", 1);
    printf("chain (warm)\n");
    test_chain("chain warm", 1);
    {
        struct ctx c;
        run_chain(&c);
        printf("  %d frames:\n", c.mine.n);
        dump("mt_unwind", &c.mine);
    }
    printf("skip and max\n");
    skip_outer();
    printf("qsort\n");
    test_qsort();
    printf("threads\n");
    test_threads();
    printf("signal\n");
    test_signal(0);
    test_signal(1);
    printf("garbage stacks\n");
    test_garbage(g_sig_ctx.ref.pc[0]);
    printf("async signals\n");
    test_async_signals();
    printf("dlclose/dlopen\n");
    test_reload(&h);
    dlclose(h);

    if (g_failures) {
        printf("%d failure(s)\n", g_failures);
        return 1;
    }
    printf("all passed\n");
    return 0;
}
