/*
 * memtrace.c - the loader of the BPF programs of bpf/memtrace.bpf.c (its
 * pair, as libbpf-tools pair name.bpf.c and name.c; what they share is
 * bpf/memtrace.h), and the life cycle of the BPF capture layer: whether
 * this kernel and process can trace at all, opening the skeleton bpftool
 * made of the programs (memtrace.skel.h) with maps sized for the options,
 * loading it, attaching the two tracepoints, the event stream of
 * the ring buffer (mt_bpf_poll), and closing.  The other files do the
 * rest, and none of them calls back here: attach.c (processes, objects,
 * probes), maps.c (the maps: per-site totals, losses, dropping a process),
 * stacks.c (stacks interned by content), elf.c and place.c (symbols and
 * where each probe goes).
 */
#include "capture_int.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "format/signum.h"
#include "memtrace.skel.h"

_Static_assert(MTB_REC_ALLOC == MT_REC_ALLOC && MTB_REC_FREE == MT_REC_FREE &&
		       MTB_REC_REALLOC == MT_REC_REALLOC && MTB_REC_MALLOPT == MT_BPF_EV_MALLOPT,
	       "record types of memtrace.h and codec.h");

/* ---- libbpf's messages ------------------------------------------------ */

/* Kept quiet unless MEMTRACE_BPF_DEBUG=1; the tail is kept to explain a
 * failed load in one line. */
static char logbuf[16384];
static size_t loglen;

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	static int debug = -1;

	if (debug < 0) {
		const char *e = getenv("MEMTRACE_BPF_DEBUG");
		debug = e && *e && strcmp(e, "0");
	}
	if (debug) {
		va_list aq;
		va_copy(aq, ap);
		vfprintf(stderr, fmt, aq);
		va_end(aq);
	}
	/* The verifier's log comes in one call: keep its end. */
	char small[1024], *line = small;
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(small, sizeof(small), fmt, aq);
	va_end(aq);

	if (n < 0)
		return 0;
	if ((size_t)n >= sizeof(small)) {
		line = xmalloc((size_t)n + 1);
		vsnprintf(line, (size_t)n + 1, fmt, ap);
	}
	const char *tail = line;
	size_t len = (size_t)n, room = sizeof(logbuf) / 2;

	if (len > room) {
		tail = line + len - room;
		len = room;
	}
	if (loglen + len >= sizeof(logbuf)) {
		/* keep the newer part */
		size_t keep = sizeof(logbuf) - 1 - len;
		if (loglen > keep) {
			memmove(logbuf, logbuf + loglen - keep, keep);
			loglen = keep;
		}
	}
	memcpy(logbuf + loglen, tail, len);
	loglen += len;
	logbuf[loglen] = 0;
	if (line != small)
		free(line);
	return 0;
}

/* One line out of libbpf's log of a failed load: the verifier's last word. */
void mtb_load_error(const char *logbuf, int errnum, char *err, size_t errlen)
{
	const char *end = strstr(logbuf, "-- END PROG LOAD LOG --");
	char prog[64] = "";
	const char *failed = strstr(logbuf, "': BPF program load failed");

	/* The program named in the failure line. */
	if (failed) {
		const char *p = failed;
		while (p > logbuf && p[-1] != '\'')
			p--;
		if (p > logbuf + 5 && !strncmp(p - 6, "prog '", 6) &&
		    failed - p < (long)sizeof(prog))
			snprintf(prog, sizeof(prog), "%.*s", (int)(failed - p), p);
	}
	if (end) {
		/* Walk back over the summary lines to the complaint. */
		const char *q = end;
		while (q > logbuf) {
			const char *eol = q - 1;
			while (eol > logbuf && eol[-1] != '\n')
				eol--;
			size_t n = q - eol;
			while (n && (eol[n - 1] == '\n' || eol[n - 1] == ' '))
				n--;
			if (n && strncmp(eol, "processed ", 10) &&
			    strncmp(eol, "verification time", 17) &&
			    strncmp(eol, "stack depth", 11) &&
			    !strstr(eol, "BEGIN PROG LOAD LOG") && strncmp(eol, "libbpf:", 7)) {
				snprintf(err, errlen, "BPF verifier rejected %s: %.*s",
					 prog[0] ? prog : "a program", (int)(n > 200 ? 200 : n),
					 eol);
				return;
			}
			q = eol;
		}
	}
	snprintf(err, errlen, "loading the BPF programs failed: %s", strerror(errnum));
}

/* ---- can this kernel and this process do it --------------------------- */

static int has_caps(int *sys_admin, int *bpf, int *perfmon)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
#define CAPSET(c) ((d[(c) / 32].effective >> ((c) % 32)) & 1)
	*sys_admin = CAPSET(CAP_SYS_ADMIN);
	*bpf = CAPSET(39);     /* CAP_BPF */
	*perfmon = CAPSET(38); /* CAP_PERFMON */
#undef CAPSET
	return 0;
}

int mt_bpf_privileged(void)
{
	int admin = 0, bpf = 0, perfmon = 0;
	return has_caps(&admin, &bpf, &perfmon) == 0 && (admin || (bpf && perfmon));
}

int mtb_check_support(const char *root, char *err, size_t errlen)
{
	char path[512];
	int admin = 0, bpf = 0, perfmon = 0;
	struct stat st;

	if (has_caps(&admin, &bpf, &perfmon) == 0 && !admin && !(bpf && perfmon)) {
		snprintf(err, errlen,
			 "the BPF backend needs root, or CAP_BPF and CAP_PERFMON (uid %u has %s)",
			 (unsigned)geteuid(),
			 bpf	 ? "CAP_BPF only" :
			 perfmon ? "CAP_PERFMON only" :
				   "neither");
		return -1;
	}

	unsigned major = 0, minor = 0;
	snprintf(path, sizeof(path), "%s/proc/sys/kernel/osrelease", root);
	FILE *f = fopen(path, "r");
	char rel[128] = "";

	if (f) {
		if (!fgets(rel, sizeof(rel), f))
			rel[0] = 0;
		fclose(f);
	} else if (!strcmp(root, "/")) {
		struct utsname u;
		if (uname(&u) == 0)
			snprintf(rel, sizeof(rel), "%s", u.release);
	}
	rel[strcspn(rel, "\n")] = 0;
	if (sscanf(rel, "%u.%u", &major, &minor) == 2 &&
	    (major < 5 || (major == 5 && minor < 15))) {
		snprintf(
			err, errlen,
			"kernel %s is too old for the BPF backend (needs 5.15: ring buffer, uprobe BPF cookies)",
			rel);
		return -1;
	}

	snprintf(path, sizeof(path), "%s/sys/kernel/btf/vmlinux", root);
	if (stat(path, &st)) {
		snprintf(err, errlen,
			 "the kernel has no BTF (%s is missing: needs CONFIG_DEBUG_INFO_BTF)",
			 "/sys/kernel/btf/vmlinux");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/sys/bus/event_source/devices/uprobe", root);
	if (stat(path, &st)) {
		snprintf(err, errlen,
			 "the kernel has no uprobes (%s is missing: needs CONFIG_UPROBE_EVENTS)",
			 "/sys/bus/event_source/devices/uprobe");
		return -1;
	}
	/* The files above can be there while the system call is not: an
	 * emulator (qemu-user passes the host's /sys through but has no
	 * bpf()), or a kernel without CONFIG_BPF_SYSCALL.  A one-entry array
	 * map is the smallest thing that proves it works.  (Only for this
	 * machine: another ROOT is a tree that describes some other one.) */
	if (strcmp(root, "/")) {
		snprintf(err, errlen, "kernel %s with BTF and uprobes", rel);
		return 0;
	}
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = 1;
	int fd = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "the bpf() system call %s (%s)",
			 e == ENOSYS ?
				 "is missing: a kernel without CONFIG_BPF_SYSCALL, or an emulator" :
				 "fails",
			 strerror(e));
		return -1;
	}
	close(fd);
	snprintf(err, errlen, "kernel %s with BTF, uprobes and bpf(), and %s", rel,
		 admin ? "root" : "CAP_BPF and CAP_PERFMON");
	return 0;
}

int mt_bpf_available(char *why, size_t whylen)
{
	return mtb_check_support("/", why, whylen) == 0;
}

/* ---- open, close ------------------------------------------------------ */

/* What the running kernel has, from its BTF (about 10 ms): the return
 * address in user stacks taken at a function's entry (x86), uprobe_multi
 * links. */
static void kernel_features(int *entry_frames, int *multi)
{
	struct btf *v = btf__load_vmlinux_btf();

	*entry_frames = 0;
	*multi = 0;
	if (!v)
		return;
#if defined(__x86_64__)
	*entry_frames = btf__find_by_name_kind(v, "is_uprobe_at_func_entry", BTF_KIND_FUNC) > 0;
#endif
	*multi = btf__find_by_name_kind(v, "bpf_uprobe_multi_link", BTF_KIND_STRUCT) > 0;
	btf__free(v);
}

/* Whether the kernel can run the unwinder: x86-64 (format/cfi.c's rules),
 * and the helpers it calls (Linux 5.17).  Without it the programs take the
 * kernel's frame-pointer walk, and the verifier, which knows the constant
 * that says so, never looks at the unwinder's code. */
static int unwinder_supported(void)
{
#if defined(__x86_64__)
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_loop, NULL) == 1 &&
	       libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_find_vma, NULL) == 1;
#else
	return 0;
#endif
}

static uint32_t pow2_at_least(uint64_t n, uint32_t min)
{
	uint64_t p = min;
	while (p < n && p < (1u << 31))
		p <<= 1;
	return (uint32_t)p;
}

/* The options, each left at 0 given its default. */
static struct mt_bpf_opts with_defaults(const struct mt_bpf_opts *o)
{
	struct mt_bpf_opts d = o ? *o : (struct mt_bpf_opts){ .events = 0 };

	if (!d.max_live)
		d.max_live = 1u << 20;
	if (!d.max_stacks)
		d.max_stacks = 1u << 16;
	if (!d.max_pending)
		d.max_pending = 1u << 16;
	if (!d.ringbuf_bytes)
		d.ringbuf_bytes = 64u << 20;
	return d;
}

/* The number in the /proc/sys file PATH: 0, or -1 if it cannot be read. */
static int read_sysctl(const char *path, unsigned long long *v)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%llu", v) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/* The mapping calls' tracepoint program (the exit alone: memtrace.bpf.c). */
#define MAP_PROGS(s) (s)->progs.mt_sys_exit

uint64_t mt_bpf_sample_mean(const struct mt_bpf *b)
{
	return b->o.sample_mean;
}

/* Sampling's constants (memtrace.h): the quantiles of an exponential
 * distribution of the mean, from which the programs draw the distances to
 * the next sample point, and the weights of sampled blocks, 1 / (1 -
 * exp(-x)) in 16.16 at the middle of each 1/256 step of x = size / mean;
 * the sampled blocks' table only where it is used (recording). */
static void configure_sampling(struct mt_bpf *b)
{
	struct memtrace_bpf *s = b->skel;
	uint64_t r = b->o.sample_mean;
	s->rodata->sample_mean = r;
	if (!r || !b->o.events || !b->o.lean)
		bpf_map__set_max_entries(s->maps.sampled, 1);
	else
		bpf_map__set_max_entries(s->maps.sampled, b->o.max_live);
	for (int i = 0; r && i < MTB_SAMPLE_GAPS; i++) {
		double g = -log((i + 0.5) / MTB_SAMPLE_GAPS) * (double)r;
		s->rodata->sample_gaps[i] = g < 1 ? 1 : (uint64_t)(g + 0.5);
	}
	for (int i = 0; r && i < MTB_SAMPLE_WEIGHTS; i++)
		s->rodata->sample_weight[i] =
			(uint32_t)(MTB_SAMPLE_ONE / -expm1(-(i + 0.5) / 256.0) + 0.5);
}

/* Before loading: the programs' constants, the sizes of the maps, the
 * attach type of the programs. */
static void configure(struct mt_bpf *b, long page)
{
	struct memtrace_bpf *s = b->skel;
	unsigned long long v;
	uint64_t pid_max = 1u << 22;
	int entry_frames;

	s->rodata->events_mode = b->o.events ? 1 : 0;
	s->rodata->lean = b->o.events && b->o.lean ? 1 : 0;
	if (!s->rodata->lean) /* the lean mode's table of blocks: unused */
		bpf_map__set_max_entries(s->maps.known, 1);
	s->rodata->min_age_ns = b->o.min_age_ns;
	s->rodata->self_tgid = (uint32_t)b->self;
	configure_sampling(b);
	/* MEMTRACE_BPF_PROBES_ONLY=1: the programs return at once (memtrace.bpf.c) */
	const char *po = getenv("MEMTRACE_BPF_PROBES_ONLY");
	s->rodata->probes_only = po && *po && strcmp(po, "0");
	/* MEMTRACE_BPF_UNWIND=fp: frame pointers only, as before the unwind
	 * tables (for comparing their cost: tools/bench/bench.sh). */
	const char *uw = getenv("MEMTRACE_BPF_UNWIND");
	b->dwarf = !(uw && !strcmp(uw, "fp")) && unwinder_supported();
	s->rodata->dwarf_unwind = (uint32_t)b->dwarf;
	bpf_map__set_max_entries(s->maps.ustacks, b->o.max_stacks);
	if (!b->dwarf) { /* the unwinder's maps unused: as small as can be */
		bpf_map__set_max_entries(s->maps.ustacks, 1);
		bpf_map__set_max_entries(s->maps.urcache, 1);
		bpf_map__set_max_entries(s->maps.uvmas, 1);
	}

	b->max_frames = MTB_MAX_FRAMES;
	if (read_sysctl("/proc/sys/kernel/perf_event_max_stack", &v) == 0 && v >= 1 &&
	    v < b->max_frames)
		b->max_frames = (unsigned)v;
	bpf_map__set_value_size(s->maps.stacks, b->max_frames * sizeof(uint64_t));
	/* With the unwinder the kernel's stack map (preallocated, 1 KB an
	 * entry) only takes the stacks it could not keep: a small one. */
	bpf_map__set_max_entries(s->maps.stacks,
				 b->dwarf && b->o.max_stacks > 4096 ? 4096 : b->o.max_stacks);
	bpf_map__set_max_entries(s->maps.live, b->o.max_live);
	bpf_map__set_max_entries(s->maps.sites, b->o.max_stacks);
	/* One call slot per thread: as many as thread ids when pid_max is
	 * small enough, else max_pending (threads share slots in turn). */
	if (read_sysctl("/proc/sys/kernel/pid_max", &v) == 0 && v >= 1)
		pid_max = v;
	b->nslots = pow2_at_least(pid_max < b->o.max_pending ? pid_max : b->o.max_pending, 64);
	bpf_map__set_max_entries(s->maps.calls, b->nslots);
	s->rodata->slot_mask = b->nslots - 1;
	kernel_features(&entry_frames, &b->multi);
	s->rodata->entry_frames = entry_frames;
	/* MEMTRACE_BPF_NO_MULTI=1: one link per probe, as on kernels before
	 * 6.6 (tests cover both). */
	const char *nm = getenv("MEMTRACE_BPF_NO_MULTI");
	if (nm && *nm && strcmp(nm, "0"))
		b->multi = 0;
	if (b->multi) {
		bpf_program__set_expected_attach_type(s->progs.mt_entry, MTB_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(s->progs.mt_return, MTB_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(s->progs.mt_free, MTB_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(s->progs.mt_new, MTB_TRACE_UPROBE_MULTI);
	}
	bpf_map__set_max_entries(s->maps.rb, b->o.events ? pow2_at_least(b->o.ringbuf_bytes, page) :
							   (uint32_t)page);
	struct bpf_program *const maps[] = { MAP_PROGS(s) };
	for (size_t i = 0; i < sizeof maps / sizeof *maps; i++)
		if (!b->o.events || !b->o.mmaps)
			bpf_program__set_autoload(maps[i], false);
}

/* After loading: the programs and maps by name, the call slots mapped, the
 * global counters zeroed.  0, or -1 with ERR. */
static int after_load(struct mt_bpf *b, long page, char *err, size_t errlen)
{
	struct memtrace_bpf *s = b->skel;
	uint32_t zero = 0;
	struct mtb_stats st0 = { { 0 } };

	b->p_entry = s->progs.mt_entry;
	b->p_return = s->progs.mt_return;
	b->p_free = s->progs.mt_free;
	b->p_new = s->progs.mt_new;
	b->fd_traced = bpf_map__fd(s->maps.traced);
	b->fd_excluded = bpf_map__fd(s->maps.excluded);
	b->fd_calls = bpf_map__fd(s->maps.calls);
	b->fd_live = bpf_map__fd(s->maps.live);
	b->fd_sites = bpf_map__fd(s->maps.sites);
	b->fd_stacks = bpf_map__fd(s->maps.stacks);
	b->fd_stats = bpf_map__fd(s->maps.stats);
	b->fd_objinfo = bpf_map__fd(s->maps.objinfo);
	b->fd_utabs = bpf_map__fd(s->maps.utabs);
	b->fd_utab_ids = bpf_map__fd(s->maps.utab_ids);
	b->fd_ustacks = bpf_map__fd(s->maps.ustacks);
	b->fd_ustk_ins = bpf_map__fd(s->maps.ustk_ins);

	b->calls_bytes = (size_t)b->nslots * ((sizeof(struct mtb_call) + 7) & ~(size_t)7);
	b->calls_bytes = (b->calls_bytes + page - 1) & ~((size_t)page - 1);
	b->calls = mmap(NULL, b->calls_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd_calls, 0);
	if (b->calls == MAP_FAILED) {
		int e = errno;
		b->calls = NULL;
		snprintf(err, errlen, "mapping the BPF call slots failed: %s", strerror(e));
		return -1;
	}
	bpf_map_update_elem(b->fd_stats, &zero, &st0, BPF_ANY);
	/* Traced processes' exits, in both modes: without it (a kernel whose
	 * tracepoint has no BTF) a process attached to that exits is reported
	 * as still running, as before. */
	b->exit_link = bpf_program__attach(s->progs.mt_proc_exit);
	/* The children a recorded process starts, which it does not follow:
	 * named in the recording.  Without the tracepoint they go uncounted. */
	if (b->o.events)
		b->fork_link = bpf_program__attach(s->progs.mt_proc_fork);
	/* The mapping calls: every traced process's, from now on.  A kernel
	 * without the system calls' raw tracepoints records no mapping calls. */
	struct bpf_program *const maps[] = { MAP_PROGS(s) };
	for (size_t i = 0; b->o.events && b->o.mmaps && i < sizeof maps / sizeof *maps; i++) {
		b->map_links[i] = bpf_program__attach(maps[i]);
		if (!b->map_links[i]) {
			mt_warning("no mapping calls: the system calls' raw tracepoint "
				   "(sys_exit) cannot be attached (%s)",
				   strerror(errno));
			break;
		}
	}
	return 0;
}

int mt_bpf_open(struct mt_bpf **out, const struct mt_bpf_opts *o, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	struct mt_bpf *b;

	*out = NULL;
	if (mtb_check_support("/", err, errlen))
		return -1;
	libbpf_set_print(print_fn);
	loglen = 0;
	logbuf[0] = 0;

	b = xcalloc(1, sizeof(*b));
	b->wake_fd = -1;
	b->o = with_defaults(o);
	b->self = getpid();
	mtb_objects_init(b);
	/* Stack map ids are below the bucket count, a power of 2. */
	mtb_stacks_init(b, pow2_at_least(b->o.max_stacks, 1));

	b->skel = memtrace_bpf__open();
	if (!b->skel) {
		int e = errno;
		snprintf(err, errlen, "opening the BPF object failed: %s", strerror(e));
		goto cleanup;
	}
	configure(b, page);
	if (memtrace_bpf__load(b->skel)) {
		int e = errno;
		mtb_load_error(logbuf, e, err, errlen);
		goto cleanup;
	}
	if (after_load(b, page, err, errlen))
		goto cleanup;
	*out = b;
	b = NULL;
cleanup:
	mt_bpf_close(b); /* NULL once it is the caller's */
	return *out ? 0 : -1;
}

/* The unwinder's counters (struct mtb_uwcount), summed over the CPUs: the
 * first bytes of each CPU's scratch. */
static void print_unwind_counts(struct mt_bpf *b)
{
	struct bpf_map *m = b->skel->maps.uscratch;
	int ncpu = libbpf_num_possible_cpus();
	size_t vsz = (bpf_map__value_size(m) + 7) & ~(size_t)7;
	uint32_t zero = 0;

	if (!b->dwarf || ncpu <= 0 || vsz < sizeof(struct mtb_uwcount))
		return;
	char *v = xcalloc((size_t)ncpu, vsz);
	if (bpf_map_lookup_elem(bpf_map__fd(m), &zero, v) == 0) {
		struct mtb_uwcount t = { 0 };
		for (int i = 0; i < ncpu; i++) {
			struct mtb_uwcount c;
			memcpy(&c, v + (size_t)i * vsz, sizeof(c));
			t.stacks += c.stacks;
			t.frames += c.frames;
			t.reads += c.reads;
			t.read_fails += c.read_fails;
			t.rule_miss += c.rule_miss;
			t.stk_vma += c.stk_vma;
		}
		double n = t.stacks ? (double)t.stacks : 1;
		fprintf(stderr,
			"memtrace: bpf unwinder: %llu stacks, %.1f frames, %.2f reads (%.3f failed), "
			"%.3f rule misses, %.4f stack lookups each\n",
			(unsigned long long)t.stacks, (double)t.frames / n, (double)t.reads / n,
			(double)t.read_fails / n, (double)t.rule_miss / n, (double)t.stk_vma / n);
	}
	free(v);
}

/* With MEMTRACE_BPF_STATS=1 (and the kernel's bpf_stats_enabled sysctl on),
 * what each program cost: tools/bench/bench.sh prints it as the BPF programs' own
 * cost per event; and the memory of the unwind tables loaded. */
static void print_prog_stats(struct mt_bpf *b)
{
	const char *env = getenv("MEMTRACE_BPF_STATS");
	if (!env || strcmp(env, "1") || !b->skel)
		return;
	struct bpf_program *prog;
	bpf_object__for_each_program(prog, b->skel->obj)
	{
		struct bpf_prog_info info = { .id = 0 };
		__u32 len = sizeof info;
		int fd = bpf_program__fd(prog);
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		/* one that never ran still cost its verification at start-up */
		fprintf(stderr,
			"memtrace: bpf %s: %llu runs, %.0f ns/run (%u instructions verified)\n",
			bpf_program__name(prog), (unsigned long long)info.run_cnt,
			info.run_cnt ? (double)info.run_time_ns / (double)info.run_cnt : 0.0,
			info.verified_insns);
	}
	print_unwind_counts(b);
	if (b->nutabs)
		fprintf(stderr, "memtrace: bpf unwind tables: %u objects, %llu rows, %llu KB\n",
			b->nutabs, (unsigned long long)b->utab_rows,
			(unsigned long long)mt_bpf_unwind_table_bytes(b) / 1024);
}

void mt_bpf_close(struct mt_bpf *b)
{
	if (!b)
		return;
	print_prog_stats(b);
	bpf_link__destroy(b->exit_link);
	bpf_link__destroy(b->fork_link);
	for (size_t i = 0; i < sizeof b->map_links / sizeof *b->map_links; i++)
		bpf_link__destroy(b->map_links[i]);
	mtb_detach_all(b);
	if (b->calls)
		munmap(b->calls, b->calls_bytes);
	if (b->rb)
		ring_buffer__free(b->rb);
	if (b->skel)
		memtrace_bpf__destroy(b->skel);
	mtb_free_objects(b);
	for (size_t i = 0; i < b->nupend; i++)
		close(b->upend[i].fd);
	free(b->upend);
	free(b->atts);
	free(b->procs);
	mtb_stacks_free(b);
	free(b->missed);
	mtb_lean_free(b);
	free(b);
}

/* ---- events ----------------------------------------------------------- */

/* A mapping call: an MT_REC_EXT event. */
static int on_maprec(struct mt_bpf *b, const struct mtb_maprec *r)
{
	struct mt_bpf_event ev = {
		.type = MT_REC_EXT,
		.map = { .kind = r->kind,
			 .by = r->by,
			 .prot = (int32_t)r->prot,
			 .flags = (int32_t)r->flags,
			 .fd = r->fd,
			 .error = r->error,
			 .addr = r->addr,
			 .len = r->len,
			 .old_addr = r->old_addr,
			 .old_len = r->old_len,
			 .offset = r->offset },
		.pid = r->pid,
		.tid = r->tid,
		.ts = r->ts,
	};
	ev.stack_id = mtb_stack_uid(b, r->kstack, r->caller);
	mt_bpf_stack(b, ev.stack_id, &ev.frames, &ev.nframes);
	b->delivered++;
	if (r->kind == MT_MAP_MMAP && (r->prot & PROT_EXEC) && r->fd >= 0 && !r->error)
		mtb_note_new_code(b, (pid_t)r->pid); /* dlopen: its table, soon */
	if (b->cb)
		b->cb(b->cb_ctx, &ev);
	return 0;
}

/* A traced process's exit: its status, kept for mt_bpf_exit_status
 * (attach.c), and an MT_REC_EXIT event. */
static int on_exitrec(struct mt_bpf *b, const struct mtb_exitrec *r)
{
	/* as wait() has it: the signal in the low 7 bits (0x80: a core dump),
	 * else the status in the next 8 */
	int sig = r->code & 0x7f;
	int64_t status = sig ? -(int64_t)mt_sig_recorded(sig) : (r->code >> 8) & 0xff;
	mtb_note_exit(b, (pid_t)r->pid, status, r->ts);
	struct mt_bpf_event ev = {
		.type = MT_REC_EXIT, .pid = r->pid, .tid = r->pid, .ts = r->ts, .status = status
	};
	b->delivered++;
	if (b->cb)
		b->cb(b->cb_ctx, &ev);
	return 0;
}

/* A traced process started a child process, which is not traced. */
static int on_childrec(struct mt_bpf *b, const struct mtb_childrec *r)
{
	struct mt_bpf_event ev = { .type = MT_BPF_EV_CHILD,
				   .pid = r->pid,
				   .tid = r->pid,
				   .ts = r->ts,
				   .child = r->child };
	b->delivered++;
	if (b->cb)
		b->cb(b->cb_ctx, &ev);
	return 0;
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct mt_bpf *b = ctx;
	const struct mtb_rec *r = data;

	if (len >= sizeof(struct mtb_exitrec) && r->type == MTB_REC_EXIT)
		return on_exitrec(b, data);
	if (len >= sizeof(struct mtb_childrec) && r->type == MTB_REC_CHILD)
		return on_childrec(b, data);
	if (len >= sizeof(struct mtb_maprec) && r->type == MTB_REC_MAP)
		return on_maprec(b, data);
	if (len < sizeof(*r))
		return 0;
	/* a long run of records: the stack map may fill meanwhile */
	if (!(++b->nrecs & 4095))
		mtb_stacks_check(b);
	if (b->o.lean && !mtb_lean_pass(b, r))
		return 0;
	struct mt_bpf_event ev = {
		.type = r->type,
		.fn = r->fn,
		.pid = r->pid,
		.tid = r->tid,
		.ts = r->ts,
		.ptr = r->ptr,
		.old_ptr = r->old_ptr,
		.size = r->size,
		.object = r->object,
	};
	if (r->type == MTB_REC_MALLOPT) {
		/* The record's fields are the call's registers: int arguments
		 * and result, whose upper halves are not theirs; malloc_trim's
		 * one argument is its pad (the record's value). */
		int trim = r->fn == MTB_FN_MALLOC_TRIM;
		ev.tune = (struct mt_mallopt){
			.tid = r->tid,
			.call = trim ? MT_TUNE_MALLOC_TRIM : MT_TUNE_MALLOPT,
			.param = trim ? 0 : (int32_t)r->ptr,
			.value = trim ? (int64_t)r->ptr : (int32_t)r->old_ptr,
			.result = (int32_t)r->size,
		};
	}
	if (r->type != MTB_REC_FREE) {
		ev.stack_id = mtb_stack_uid(b, r->kstack, r->caller);
		mt_bpf_stack(b, ev.stack_id, &ev.frames, &ev.nframes);
	}
	b->delivered++;
	if (b->cb)
		b->cb(b->cb_ctx, &ev);
	return 0;
}

void mt_bpf_set_wake_fd(struct mt_bpf *b, int fd)
{
	b->wake_fd = fd;
}

/* mt_bpf_poll's wait: TIMEOUT_MS, or until the wake fd is readable or the
 * ring wakes us: most records are submitted without a wake-up, but those
 * the loader must act on at once (a file mapped executable: a dlopen, whose
 * table it reads; a traced process's exit) force one. */
static void poll_sleep(struct mt_bpf *b, int timeout_ms)
{
	struct pollfd p[2];
	nfds_t n = 0;
	if (b->wake_fd >= 0)
		p[n++] = (struct pollfd){ .fd = b->wake_fd, .events = POLLIN };
	if (b->rb)
		p[n++] = (struct pollfd){ .fd = ring_buffer__epoll_fd(b->rb), .events = POLLIN };
	if (n) {
		poll(p, n, timeout_ms);
		return;
	}
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

int mt_bpf_poll(struct mt_bpf *b, int timeout_ms, mt_bpf_event_fn fn, void *ctx)
{
	mtb_stacks_check(b);
	/* (aggregation mode has a ring too, of one page: the exit records
	 * alone) */
	if (!b->rb) {
		b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.rb), on_record, b, NULL);
		if (!b->rb)
			return -1;
	}
	b->cb = fn;
	b->cb_ctx = ctx;
	b->delivered = 0;
	int n = ring_buffer__consume(b->rb);

	if (n == 0 && timeout_ms > 0) {
		poll_sleep(b, timeout_ms);
		n = ring_buffer__consume(b->rb);
	}
	b->cb = NULL;
	if (n < 0) {
		errno = -n;
		return -1;
	}
	return b->delivered;
}
