/*
 * bpf_capture.c - loading the BPF programs (bpf/memtrace.bpf.c) and reading
 * what they produce: the event stream of the ring buffer, the per-site
 * totals and live blocks of the maps, the loss counters.  Processes,
 * objects and probes are bpf_capture_attach.c's; symbols and probe places
 * bpf_capture_elf.c's.
 *
 * Stacks: the kernel's stack map gives an id per distinct stack and never
 * replaces an entry (no BPF_F_REUSE_STACKID), so a kernel id always names
 * the same frames and is looked up once.  When bpf_get_stackid fails (a
 * hash collision in the map, the map full) the programs keep the caller's
 * address alone.  Either way the frames are interned here by content, and
 * the id given out is ours: equal stacks get equal ids for the life of the
 * mt_bpf, whatever the kernel did.
 */
#include "capture_int.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
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

#include "memtrace.skel.h"

_Static_assert(MTB_FN_MALLOC == MT_FN_MALLOC && MTB_FN_CALLOC == MT_FN_CALLOC &&
	       MTB_FN_REALLOC == MT_FN_REALLOC && MTB_FN_REALLOCARRAY == MT_FN_REALLOCARRAY &&
	       MTB_FN_POSIX_MEMALIGN == MT_FN_POSIX_MEMALIGN &&
	       MTB_FN_ALIGNED_ALLOC == MT_FN_ALIGNED_ALLOC && MTB_FN_MEMALIGN == MT_FN_MEMALIGN &&
	       MTB_FN_VALLOC == MT_FN_VALLOC && MTB_FN_PVALLOC == MT_FN_PVALLOC &&
	       MTB_FN_FREE == MT_BPF_FN_FREE, "function ids of memtrace_bpf.h and codec.h");
_Static_assert(MTB_REC_ALLOC == MT_REC_ALLOC && MTB_REC_FREE == MT_REC_FREE &&
	       MTB_REC_REALLOC == MT_REC_REALLOC, "record types of memtrace_bpf.h and codec.h");

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
		line = malloc((size_t)n + 1);
		if (!line)
			return 0;
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
		if (p > logbuf + 5 && !strncmp(p - 6, "prog '", 6) && failed - p < (long)sizeof(prog))
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
			if (n && strncmp(eol, "processed ", 10) && strncmp(eol, "verification time", 17) &&
			    strncmp(eol, "stack depth", 11) && !strstr(eol, "BEGIN PROG LOAD LOG") &&
			    strncmp(eol, "libbpf:", 7)) {
				snprintf(err, errlen, "BPF verifier rejected %s: %.*s", prog[0] ? prog : "a program",
					 (int)(n > 200 ? 200 : n), eol);
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

int mtb_check_support(const char *root, char *err, size_t errlen)
{
	char path[512];
	int admin = 0, bpf = 0, perfmon = 0;
	struct stat st;

	if (has_caps(&admin, &bpf, &perfmon) == 0 && !admin && !(bpf && perfmon)) {
		snprintf(err, errlen,
			 "the BPF backend needs root, or CAP_BPF and CAP_PERFMON (uid %u has %s)",
			 (unsigned)geteuid(),
			 bpf ? "CAP_BPF only" : perfmon ? "CAP_PERFMON only" : "neither");
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
	if (sscanf(rel, "%u.%u", &major, &minor) == 2 && (major < 5 || (major == 5 && minor < 15))) {
		snprintf(err, errlen,
			 "kernel %s is too old for the BPF backend (needs 5.15: ring buffer, uprobe BPF cookies)",
			 rel);
		return -1;
	}

	snprintf(path, sizeof(path), "%s/sys/kernel/btf/vmlinux", root);
	if (stat(path, &st)) {
		snprintf(err, errlen, "the kernel has no BTF (%s is missing: needs CONFIG_DEBUG_INFO_BTF)",
			 "/sys/kernel/btf/vmlinux");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/sys/bus/event_source/devices/uprobe", root);
	if (stat(path, &st)) {
		snprintf(err, errlen, "the kernel has no uprobes (%s is missing: needs CONFIG_UPROBE_EVENTS)",
			 "/sys/bus/event_source/devices/uprobe");
		return -1;
	}
	return 0;
}

/* ---- small tables ----------------------------------------------------- */

void *mtb_grow(void *arr, size_t *cap, size_t need, size_t es)
{
	if (need <= *cap)
		return arr;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *p = realloc(arr, n * es);
	if (!p) {
		fprintf(stderr, "memtrace: error: out of memory\n");
		abort();
	}
	memset((char *)p + *cap * es, 0, (n - *cap) * es);
	*cap = n;
	return p;
}

uint64_t mtb_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

uint64_t *mtb_kv_find(struct mtb_kv *t, uint64_t key, int add)
{
	if (add && (t->n + 1) * 2 > t->cap) {
		struct mtb_kv u = { .cap = t->cap ? t->cap * 2 : 64 };
		u.slot = calloc(u.cap * 2, sizeof(uint64_t));
		if (!u.slot)
			abort();
		for (size_t i = 0; i < t->cap; i++)
			if (t->slot[2 * i]) {
				*mtb_kv_find(&u, t->slot[2 * i], 1) = t->slot[2 * i + 1];
			}
		free(t->slot);
		*t = u;
		t->n = 0;
		for (size_t i = 0; i < t->cap; i++)
			t->n += t->slot[2 * i] != 0;
	}
	if (!t->cap)
		return NULL;
	size_t m = t->cap - 1, i = mtb_mix64(key) & m;
	for (;; i = (i + 1) & m) {
		if (t->slot[2 * i] == key)
			return &t->slot[2 * i + 1];
		if (!t->slot[2 * i]) {
			if (!add)
				return NULL;
			t->slot[2 * i] = key;
			t->slot[2 * i + 1] = 0;
			t->n++;
			return &t->slot[2 * i + 1];
		}
	}
}

void mtb_kv_free(struct mtb_kv *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

/* ---- stacks ----------------------------------------------------------- */

static uint64_t frames_hash(const uint64_t *f, unsigned n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (unsigned i = 0; i < n; i++)
		h = mtb_mix64(h ^ f[i]) + i;
	return h | 1;
}

/* Our id of the stack F[0..N). */
static uint64_t intern(struct mt_bpf *b, const uint64_t *f, unsigned n)
{
	struct mtb_kv *t = &b->stkidx;
	uint64_t h = frames_hash(f, n), key = h;

	for (;;) {
		uint64_t *v = mtb_kv_find(t, key, 1);
		if (*v) {
			struct mtb_stack *s = &b->stacks[*v - 1];
			if (s->n == n && !memcmp(s->frames, f, n * sizeof(*f)))
				return *v;
			key = (key + 2) | 1; /* a 64-bit collision: next key */
			continue;
		}
		b->stacks = mtb_grow(b->stacks, &b->capstacks, b->nstacks + 1, sizeof(*b->stacks));
		struct mtb_stack *s = &b->stacks[b->nstacks++];
		s->hash = h;
		s->n = n;
		s->frames = malloc((n ? n : 1) * sizeof(*f));
		if (!s->frames)
			abort();
		memcpy(s->frames, f, n * sizeof(*f));
		*v = b->nstacks;
		return *v;
	}
}

/* Frames of kernel stack ID into F[0..]: how many.  The kernel walks frame
 * pointers; through code built without them the walk can pick up garbage
 * that is not a user address at all (seen: 0x444e41535f5348ff, bytes of a
 * string, in sqlite3): the stack ends before it. */
static unsigned read_kstack(struct mt_bpf *b, uint32_t id, uint64_t *f)
{
	/* Above any user-space address: x86_64 with 4-level tables (5-level
	 * space must be asked for by the program); arm64 with 52-bit VA. */
#if defined(__x86_64__)
	const uint64_t user_top = 1ull << 47;
#else
	const uint64_t user_top = 1ull << 52;
#endif
	unsigned n = 0;

	memset(f, 0, MTB_MAX_FRAMES * sizeof(*f));
	if (bpf_map_lookup_elem(b->fd_stacks, &id, f) == 0)
		while (n < b->max_frames && f[n] >= 4096 && f[n] < user_top)
			n++;
	return n;
}

/* Our id for a kernel stack key (MTB_KSTACK_CALLER or a stack map id);
 * CALLER is the return address when known (0 otherwise). */
static uint64_t stack_uid(struct mt_bpf *b, uint64_t kstack, uint64_t caller)
{
	if (kstack & MTB_KSTACK_SKIP1) {
		/* Taken at operator new's entry: frames[0] is new itself. */
		uint64_t *v = mtb_kv_find(&b->callkey, kstack, 1);
		if (!*v) {
			uint64_t f[MTB_MAX_FRAMES + 1];
			unsigned n = read_kstack(b, (uint32_t)kstack, f + 1);
			uint64_t *fr = f + 2;
			n = n ? n - 1 : 0;
			if (caller && (n == 0 || fr[0] != caller)) {
				fr--;
				fr[0] = caller;
				n++;
			}
			if (!n)
				return 0; /* not known yet: not kept */
			*v = intern(b, fr, n);
		}
		return *v;
	}
	if (kstack & MTB_KSTACK_CALLER) {
		struct mtb_kv *t = &b->callkey;
		uint64_t *v = mtb_kv_find(t, kstack, 1);
		if (!*v) {
			uint64_t pc = kstack & ~MTB_KSTACK_CALLER;
			*v = intern(b, &pc, 1);
		}
		return *v;
	}
	uint32_t id = (uint32_t)kstack;

	if (id < b->nkid && b->kid[id])
		return b->kid[id];
	uint64_t f[MTB_MAX_FRAMES + 1];
	unsigned n = read_kstack(b, id, f + 1);
	uint64_t *fr = f + 1;
	/* The walk starts at the return address; make sure it is there. */
	if (caller && (n == 0 || fr[0] != caller)) {
		fr = f;
		fr[0] = caller;
		n++;
	}
	uint64_t uid = intern(b, fr, n);

	if (id < b->nkid && (caller || n))
		b->kid[id] = (uint32_t)uid;
	return uid;
}

int mt_bpf_stack(struct mt_bpf *b, uint64_t stack_id, const uint64_t **frames, unsigned *nframes)
{
	if (!stack_id || stack_id > b->nstacks)
		return -1;
	*frames = b->stacks[stack_id - 1].frames;
	*nframes = b->stacks[stack_id - 1].n;
	return 0;
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

static uint32_t pow2_at_least(uint64_t n, uint32_t min)
{
	uint64_t p = min;
	while (p < n && p < (1u << 31))
		p <<= 1;
	return (uint32_t)p;
}

int mt_bpf_open(struct mt_bpf **out, const struct mt_bpf_opts *o, char *err, size_t errlen)
{
	struct mt_bpf *b;
	int e;

	*out = NULL;
	if (mtb_check_support("/", err, errlen))
		return -1;
	libbpf_set_print(print_fn);
	loglen = 0;
	logbuf[0] = 0;

	b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (o)
		b->o = *o;
	if (!b->o.max_live)
		b->o.max_live = 1u << 20;
	if (!b->o.max_stacks)
		b->o.max_stacks = 1u << 16;
	if (!b->o.max_pending)
		b->o.max_pending = 1u << 16;
	if (!b->o.ringbuf_bytes)
		b->o.ringbuf_bytes = 64u << 20;
	b->self = getpid();

	b->skel = memtrace_bpf__open();
	if (!b->skel) {
		e = errno;
		snprintf(err, errlen, "opening the BPF object failed: %s", strerror(e));
		goto fail;
	}
	struct memtrace_bpf *s = b->skel;

	s->rodata->events_mode = b->o.events ? 1 : 0;
	s->rodata->min_age_ns = b->o.min_age_ns;
	s->rodata->self_tgid = (uint32_t)b->self;

	b->max_frames = MTB_MAX_FRAMES;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "r");
	if (f) {
		unsigned v;
		if (fscanf(f, "%u", &v) == 1 && v >= 1 && v < b->max_frames)
			b->max_frames = v;
		fclose(f);
	}
	long page = sysconf(_SC_PAGESIZE);
	bpf_map__set_value_size(s->maps.stacks, b->max_frames * sizeof(uint64_t));
	bpf_map__set_max_entries(s->maps.stacks, b->o.max_stacks);
	bpf_map__set_max_entries(s->maps.live, b->o.max_live);
	bpf_map__set_max_entries(s->maps.sites, b->o.max_stacks);
	/* One call slot per thread: as many as thread ids when pid_max is
	 * small enough, else max_pending (threads share slots in turn). */
	uint64_t pid_max = 1u << 22;
	f = fopen("/proc/sys/kernel/pid_max", "r");
	if (f) {
		unsigned long long v;
		if (fscanf(f, "%llu", &v) == 1 && v >= 1)
			pid_max = v;
		fclose(f);
	}
	b->nslots = pow2_at_least(pid_max < b->o.max_pending ? pid_max : b->o.max_pending, 64);
	bpf_map__set_max_entries(s->maps.calls, b->nslots);
	s->rodata->slot_mask = b->nslots - 1;
	int entry_frames;
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
	bpf_map__set_max_entries(s->maps.rb, b->o.events ? pow2_at_least(b->o.ringbuf_bytes, page)
							 : (uint32_t)page);

	if (memtrace_bpf__load(s)) {
		e = errno;
		mtb_load_error(logbuf, e, err, errlen);
		goto fail;
	}
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

	b->calls_bytes = (size_t)b->nslots * ((sizeof(struct mtb_call) + 7) & ~(size_t)7);
	b->calls_bytes = (b->calls_bytes + page - 1) & ~((size_t)page - 1);
	b->calls = mmap(NULL, b->calls_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd_calls, 0);
	if (b->calls == MAP_FAILED) {
		e = errno;
		b->calls = NULL;
		snprintf(err, errlen, "mapping the BPF call slots failed: %s", strerror(e));
		goto fail;
	}

	uint32_t zero = 0;
	struct mtb_stats st0 = { { 0 } };
	bpf_map_update_elem(b->fd_stats, &zero, &st0, BPF_ANY);

	/* Stack map ids are below the bucket count, a power of 2. */
	b->nkid = pow2_at_least(b->o.max_stacks, 1);
	b->kid = calloc(b->nkid, sizeof(*b->kid));
	if (!b->kid) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	*out = b;
	return 0;
fail:
	mt_bpf_close(b);
	return -1;
}

/* With MEMTRACE_BPF_STATS=1 (and the kernel's bpf_stats_enabled sysctl on),
 * what each program cost: tools/bench.sh prints it as the BPF programs' own
 * cost per event. */
static void print_prog_stats(struct mt_bpf *b)
{
	const char *env = getenv("MEMTRACE_BPF_STATS");
	if (!env || strcmp(env, "1") || !b->skel)
		return;
	struct bpf_program *prog;
	bpf_object__for_each_program(prog, b->skel->obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof info;
		memset(&info, 0, sizeof info);
		int fd = bpf_program__fd(prog);
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || !info.run_cnt)
			continue;
		fprintf(stderr, "memtrace: bpf %s: %llu runs, %.0f ns/run\n", bpf_program__name(prog),
			(unsigned long long)info.run_cnt, (double)info.run_time_ns / (double)info.run_cnt);
	}
}

void mt_bpf_close(struct mt_bpf *b)
{
	if (!b)
		return;
	print_prog_stats(b);
	mtb_detach_all(b);
	if (b->calls)
		munmap(b->calls, b->calls_bytes);
	if (b->rb)
		ring_buffer__free(b->rb);
	if (b->skel)
		memtrace_bpf__destroy(b->skel);
	mtb_free_objects(b);
	free(b->atts);
	free(b->procs);
	free(b->kid);
	for (size_t i = 0; i < b->nstacks; i++)
		free(b->stacks[i].frames);
	free(b->stacks);
	mtb_kv_free(&b->stkidx);
	mtb_kv_free(&b->callkey);
	free(b->missed);
	free(b);
}

/* ---- events ----------------------------------------------------------- */

static int on_record(void *ctx, void *data, size_t len)
{
	struct mt_bpf *b = ctx;
	const struct mtb_rec *r = data;

	if (len < sizeof(*r))
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
	if (r->type != MTB_REC_FREE) {
		ev.stack_id = stack_uid(b, r->kstack, r->caller);
		mt_bpf_stack(b, ev.stack_id, &ev.frames, &ev.nframes);
	}
	b->delivered++;
	if (b->cb)
		b->cb(b->cb_ctx, &ev);
	return 0;
}

int mt_bpf_poll(struct mt_bpf *b, int timeout_ms, mt_bpf_event_fn fn, void *ctx)
{
	if (!b->o.events) {
		/* Aggregation mode has no events: only the wait. */
		if (timeout_ms > 0) {
			struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
			nanosleep(&ts, NULL);
		}
		return 0;
	}
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
		struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
		n = ring_buffer__consume(b->rb);
	}
	b->cb = NULL;
	if (n < 0) {
		errno = -n;
		return -1;
	}
	return b->delivered;
}

/* ---- maps ------------------------------------------------------------- */

int mtb_map_walk(int fd, size_t ksz, size_t vsz,
		 int (*fn)(void *ctx, const void *key, const void *val), void *ctx)
{
	uint32_t cap = 16384;
	uint64_t in = 0, outb = 0;
	void *inp = NULL;
	char *keys = malloc(cap * ksz), *vals = malloc(cap * vsz);
	int ret = 0, use_batch = 1;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	if (!keys || !vals) {
		free(keys);
		free(vals);
		errno = ENOMEM;
		return -1;
	}
	while (use_batch) {
		uint32_t count = cap;
		int err = bpf_map_lookup_batch(fd, inp, &outb, keys, vals, &count, &opts);
		int e = err ? errno : 0;

		if (err && e == ENOSPC && count == 0) {
			/* One bucket holds more than a batch: bigger batch. */
			cap *= 4;
			char *k2 = realloc(keys, cap * ksz), *v2 = realloc(vals, cap * vsz);
			if (!k2 || !v2) {
				free(k2 ? k2 : keys);
				free(v2 ? v2 : vals);
				errno = ENOMEM;
				return -1;
			}
			keys = k2;
			vals = v2;
			continue;
		}
		if (err && e != ENOENT) {
			if (!inp && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP)) {
				use_batch = 0; /* no batch ops: one by one */
				break;
			}
			ret = -1;
			errno = e;
			goto out;
		}
		for (uint32_t i = 0; i < count; i++)
			if (fn(ctx, keys + i * ksz, vals + i * vsz))
				goto out;
		if (err) /* ENOENT: that was the last batch */
			goto out;
		in = outb;
		inp = &in;
	}
	/* get_next_key walk (kernels without batch lookups for this map). */
	{
		char *k = keys, *next = keys + ksz;
		int first = 1;

		if (cap < 2) {
			errno = EINVAL;
			ret = -1;
			goto out;
		}
		while (bpf_map_get_next_key(fd, first ? NULL : k, next) == 0) {
			first = 0;
			memcpy(k, next, ksz);
			if (bpf_map_lookup_elem(fd, k, vals) == 0 && fn(ctx, k, vals))
				break;
		}
	}
out:
	free(keys);
	free(vals);
	return ret;
}

struct site_acc {
	uint32_t pid;
	uint32_t object;
	int fn;
	uint64_t uid;
	uint64_t out_bytes, out_allocs, allocs, bytes, culled, oldest;
};

struct sites_walk {
	struct mt_bpf *b;
	struct mtb_kv idx; /* (pid << 32 | uid) -> index + 1 */
	struct site_acc *acc;
	size_t n, cap;
	uint64_t now, min_age;
};

static struct site_acc *acc_get(struct sites_walk *w, uint32_t pid, uint64_t uid)
{
	uint64_t *v = mtb_kv_find(&w->idx, (uint64_t)pid << 32 | uid, 1);

	if (!*v) {
		w->acc = mtb_grow(w->acc, &w->cap, w->n + 1, sizeof(*w->acc));
		struct site_acc *a = &w->acc[w->n++];
		memset(a, 0, sizeof(*a));
		a->pid = pid;
		a->uid = uid;
		a->object = UINT32_MAX;
		a->fn = -1;
		*v = w->n;
	}
	return &w->acc[*v - 1];
}

static int site_cb(void *ctx, const void *key, const void *val)
{
	struct sites_walk *w = ctx;
	const struct mtb_site_key *k = key;
	const struct mtb_site *v = val;
	struct site_acc *a = acc_get(w, k->tgid, stack_uid(w->b, k->kstack, 0));

	a->allocs += v->allocations;
	a->bytes += v->allocated_bytes;
	a->culled += v->culled;
	if (!w->min_age) {
		a->out_allocs += v->live_allocations;
		a->out_bytes += v->live_bytes;
	}
	if (v->object_plus1)
		a->object = v->object_plus1 - 1;
	if (v->fn_plus1 && v->fn_plus1 <= MT_FN_COUNT)
		a->fn = (int)v->fn_plus1 - 1;
	return 0;
}

static int live_cb(void *ctx, const void *key, const void *val)
{
	struct sites_walk *w = ctx;
	const struct mtb_live_key *k = key;
	const struct mtb_live *v = val;

	if (w->now < v->ts || w->now - v->ts < w->min_age)
		return 0;
	struct site_acc *a = acc_get(w, k->tgid, stack_uid(w->b, v->kstack, 0));

	a->out_allocs++;
	a->out_bytes += v->size;
	if (!a->oldest || v->ts < a->oldest)
		a->oldest = v->ts;
	return 0;
}

int mt_bpf_read_sites(struct mt_bpf *b, uint64_t min_age_ns,
		      void (*fn)(void *ctx, const struct mt_bpf_site *s), void *ctx)
{
	struct sites_walk w = { .b = b, .min_age = min_age_ns };
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	w.now = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	int ret = mtb_map_walk(b->fd_sites, sizeof(struct mtb_site_key), sizeof(struct mtb_site), site_cb, &w);

	if (ret == 0 && min_age_ns)
		ret = mtb_map_walk(b->fd_live, sizeof(struct mtb_live_key), sizeof(struct mtb_live), live_cb, &w);
	if (ret == 0) {
		for (size_t i = 0; i < w.n; i++) {
			struct site_acc *a = &w.acc[i];
			struct mt_bpf_site s = {
				.pid = a->pid,
				.stack_id = a->uid,
				.outstanding_bytes = a->out_bytes,
				.outstanding_allocations = a->out_allocs,
				.allocations = a->allocs,
				.allocated_bytes = a->bytes,
				.culled = a->culled,
				.oldest_ts = a->oldest,
				.object = a->object,
				.fn = a->fn,
			};
			mt_bpf_stack(b, a->uid, &s.frames, &s.nframes);
			fn(ctx, &s);
		}
		ret = (int)w.n;
	}
	free(w.acc);
	mtb_kv_free(&w.idx);
	return ret;
}

/* ---- losses ----------------------------------------------------------- */

struct stats_walk {
	uint32_t pid;
	uint64_t c[MTB_ST_COUNT];
};

static int stats_cb(void *ctx, const void *key, const void *val)
{
	struct stats_walk *w = ctx;
	const struct mtb_stats *v = val;

	if (w->pid && *(const uint32_t *)key != w->pid)
		return 0;
	for (int i = 0; i < MTB_ST_COUNT; i++)
		w->c[i] += v->c[i];
	return 0;
}

static void read_stats(struct mt_bpf *b, uint32_t pid, uint64_t c[MTB_ST_COUNT])
{
	struct stats_walk w = { .pid = pid };

	if (pid) {
		struct mtb_stats v;
		if (bpf_map_lookup_elem(b->fd_stats, &pid, &v) == 0)
			stats_cb(&w, &pid, &v);
	} else {
		mtb_map_walk(b->fd_stats, sizeof(uint32_t), sizeof(struct mtb_stats), stats_cb, &w);
	}
	for (size_t i = 0; i < b->nmissed; i++)
		if (!pid || b->missed[i].tgid == pid)
			w.c[MTB_ST_MISSED_RETURN] += b->missed[i].n;
	memcpy(c, w.c, sizeof(w.c));
}

void mtb_add_missed(struct mt_bpf *b, uint32_t tgid, uint64_t n)
{
	for (size_t i = 0; i < b->nmissed; i++)
		if (b->missed[i].tgid == tgid) {
			b->missed[i].n += n;
			return;
		}
	b->missed = mtb_grow(b->missed, &b->capmissed, b->nmissed + 1, sizeof(*b->missed));
	b->missed[b->nmissed].tgid = tgid;
	b->missed[b->nmissed++].n = n;
}

void mt_bpf_lost(struct mt_bpf *b, uint32_t pid_or_0, uint64_t lost[MT_LOST_KIND_COUNT])
{
	uint64_t c[MTB_ST_COUNT];

	read_stats(b, pid_or_0, c);
	memset(lost, 0, sizeof(uint64_t) * MT_LOST_KIND_COUNT);
	lost[MT_LOST_BUFFER_FULL] = c[MTB_ST_RINGBUF_FULL];
	lost[MT_LOST_MAP_FULL] = c[MTB_ST_PENDING_FULL] + c[MTB_ST_SITES_FULL] +
				 (b->o.events ? 0 : c[MTB_ST_LIVE_FULL]);
	lost[MT_LOST_MISSED_RETURN] = c[MTB_ST_MISSED_RETURN] + c[MTB_ST_MISSED_NESTED];
	lost[MT_LOST_STACK] = c[MTB_ST_STACK_ERROR];
}

uint64_t mt_bpf_unmatched_frees(struct mt_bpf *b, uint32_t pid_or_0)
{
	uint64_t c[MTB_ST_COUNT];

	read_stats(b, pid_or_0, c);
	return c[MTB_ST_UNMATCHED_FREE];
}

uint64_t mt_bpf_untracked(struct mt_bpf *b, uint32_t pid_or_0)
{
	uint64_t c[MTB_ST_COUNT];

	read_stats(b, pid_or_0, c);
	return c[MTB_ST_LIVE_FULL];
}

/* ---- dropping a process ----------------------------------------------- */

struct drop_walk {
	uint32_t tgid;
	size_t ksz;
	size_t tgid_off;
	char *keys;
	size_t n, cap;
};

static int drop_cb(void *ctx, const void *key, const void *val)
{
	struct drop_walk *w = ctx;
	uint32_t t;

	memcpy(&t, (const char *)key + w->tgid_off, sizeof(t));
	if (t != w->tgid)
		return 0;
	w->keys = mtb_grow(w->keys, &w->cap, (w->n + 1) * w->ksz, 1);
	memcpy(w->keys + w->n * w->ksz, key, w->ksz);
	w->n++;
	return 0;
}

static void drop_keys(int fd, size_t ksz, size_t vsz, size_t tgid_off, uint32_t tgid)
{
	struct drop_walk w = { .tgid = tgid, .ksz = ksz, .tgid_off = tgid_off };

	if (mtb_map_walk(fd, ksz, vsz, drop_cb, &w) == 0)
		for (size_t i = 0; i < w.n; i++)
			bpf_map_delete_elem(fd, w.keys + i * ksz);
	free(w.keys);
}

int mtb_release_slot(struct mtb_call *c, uint64_t own)
{
	return own && __atomic_compare_exchange_n(&c->own, &own, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

void mtb_drop_process(struct mt_bpf *b, uint32_t tgid)
{
	drop_keys(b->fd_live, sizeof(struct mtb_live_key), sizeof(struct mtb_live),
		  offsetof(struct mtb_live_key, tgid), tgid);
	drop_keys(b->fd_sites, sizeof(struct mtb_site_key), sizeof(struct mtb_site),
		  offsetof(struct mtb_site_key, tgid), tgid);
	for (uint32_t i = 0; i < b->nslots; i++) {
		struct mtb_call *c = &b->calls[i];
		uint64_t own = __atomic_load_n(&c->own, __ATOMIC_ACQUIRE);

		if (own && c->tgid == tgid)
			mtb_release_slot(c, own);
	}
}

/* Fresh counters for a process traced anew. */
void mtb_reset_stats(struct mt_bpf *b, uint32_t tgid)
{
	bpf_map_delete_elem(b->fd_stats, &tgid);
	for (size_t i = 0; i < b->nmissed; i++)
		if (b->missed[i].tgid == tgid)
			b->missed[i].n = 0;
}

void mtb_set_trace_all(struct mt_bpf *b, int on)
{
	b->skel->bss->trace_all = on ? 1 : 0;
}
