/*
 * stacks.c - the stacks of the BPF capture layer: a kernel stack key (a
 * stack map id, or the caller's address alone) turned into frames, and the
 * frames interned by content into the ids the API gives out.
 *
 * The kernel's stack map gives an id per distinct stack and never replaces
 * an entry (no BPF_F_REUSE_STACKID), so a kernel id always names the same
 * frames and is looked up once.  When bpf_get_stackid fails (a hash
 * collision in the map, the map full) the programs keep the caller's
 * address alone.  Either way the frames are interned here by content, and
 * the id given out is ours: equal stacks get equal ids for the life of the
 * mt_bpf, whatever the kernel did.
 */
#include "capture_int.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"

void mtb_stacks_init(struct mt_bpf *b, size_t nkid)
{
	b->nkid = nkid;
	b->kid = xcalloc(nkid, sizeof(*b->kid));
	mt_ptrmap_xinit(&b->stkidx, 64);
	mt_ptrmap_xinit(&b->callkey, 64);
}

void mtb_stacks_free(struct mt_bpf *b)
{
	free(b->kid);
	for (size_t i = 0; i < b->nstacks; i++)
		free(b->stacks[i].frames);
	free(b->stacks);
	mt_ptrmap_destroy(&b->stkidx);
	mt_ptrmap_destroy(&b->callkey);
}

static uint64_t frames_hash(const uint64_t *f, unsigned n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (unsigned i = 0; i < n; i++)
		h = mt_hash64(h ^ f[i]) + i;
	return h | 1;
}

/* Our id of the stack F[0..N). */
static uint64_t intern(struct mt_bpf *b, const uint64_t *f, unsigned n)
{
	uint64_t h = frames_hash(f, n), key = h, id;

	/* Keys stay odd, hence never 0, as the map needs. */
	while (mt_ptrmap_get(&b->stkidx, key, &id)) {
		const struct mtb_stack *s = &b->stacks[id - 1];

		if (s->n == n && !memcmp(s->frames, f, n * sizeof(*f)))
			return id;
		key = (key + 2) | 1; /* a 64-bit collision: next key */
	}
	mt_grow(&b->stacks, &b->capstacks, b->nstacks, sizeof(*b->stacks));
	b->stacks[b->nstacks] = (struct mtb_stack){
		.hash = h,
		.n = n,
		.frames = xmalloc((n ? n : 1) * sizeof(*f)),
	};
	memcpy(b->stacks[b->nstacks].frames, f, n * sizeof(*f));
	id = ++b->nstacks;
	mt_ptrmap_xput(&b->stkidx, key, id);
	return id;
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

/* The kernel's walk of a stack starts at the return address of the
 * allocator call, CALLER, or should: puts it in front of the N frames at FR
 * (FR[-1] is room for it) where the walk did not.  Returns the stack's
 * start. */
static uint64_t *from_caller(uint64_t *fr, unsigned *n, uint64_t caller)
{
	if (caller && (*n == 0 || fr[0] != caller)) {
		*--fr = caller;
		++*n;
	}
	return fr;
}

/* Our id of the N frames at F, kept under stack key KSTACK (never 0: it
 * has a flag bit set) for the events that name it again; 0 if N is 0
 * (not kept). */
static uint64_t intern_key(struct mt_bpf *b, uint64_t kstack, const uint64_t *f, unsigned n)
{
	if (!n)
		return 0;
	uint64_t id = intern(b, f, n);
	mt_ptrmap_xput(&b->callkey, kstack, id);
	return id;
}

/* A stack taken at operator new's entry (MTB_KSTACK_SKIP1): frames[0] is
 * new itself.  0 while the kernel's stack is not known yet (not kept). */
static uint64_t skip1_uid(struct mt_bpf *b, uint64_t kstack, uint64_t caller)
{
	uint64_t f[MTB_MAX_FRAMES + 1];
	unsigned n = read_kstack(b, (uint32_t)kstack, f + 1);

	n = n ? n - 1 : 0;
	uint64_t *fr = from_caller(f + 2, &n, caller);
	return intern_key(b, kstack, fr, n);
}

/* A kernel stack map id: read once, remembered in b->kid. */
static uint64_t kernel_uid(struct mt_bpf *b, uint32_t id, uint64_t caller)
{
	if (id < b->nkid && b->kid[id])
		return b->kid[id];
	uint64_t f[MTB_MAX_FRAMES + 1];
	unsigned n = read_kstack(b, id, f + 1);
	uint64_t *fr = from_caller(f + 1, &n, caller);
	uint64_t uid = intern(b, fr, n);

	if (id < b->nkid && (caller || n))
		b->kid[id] = (uint32_t)uid;
	return uid;
}

/* Our id of unwound stack S (s->n 0: not found), kept under KSTACK. */
static uint64_t ustack_uid(struct mt_bpf *b, uint64_t kstack, const struct mtb_ustack *s,
			   uint64_t caller)
{
	uint64_t f[MTB_MAX_FRAMES + 2];
	unsigned n = 0;

	/* (the unwinder starts at the caller: never needed but when the
	 * stack was not found) */
	if (caller && (s->n == 0 || s->pc[0] != caller))
		f[n++] = caller;
	for (unsigned i = 0; i < s->n && n < MTB_MAX_FRAMES; i++)
		f[n++] = s->pc[i];
	/* A stack cut at the depth limit says so in its last frame. */
	if (s->n && (s->flags & MTB_USTACK_TRUNCATED))
		f[n++] = MT_FRAME_TRUNCATED;
	return intern_key(b, kstack, f, n);
}

/* A stack the kernel unwound with the tables (MTB_KSTACK_DWARF): read once
 * from the ustacks map.  Its frames start at the return address already. */
static uint64_t dwarf_uid(struct mt_bpf *b, uint64_t kstack, uint64_t caller)
{
	uint64_t key = kstack & MTB_USTACK_HASH_MASK;
	struct mtb_ustack s;

	if (bpf_map_lookup_elem(b->fd_ustacks, &key, &s) || s.n > MTB_MAX_FRAMES)
		s.n = 0;
	return ustack_uid(b, kstack, &s, caller);
}

/* Empties the ustacks map, every stack in it read first (kept by its key in
 * callkey: a later event or live block naming the key finds it there).  The
 * programs never replace a stack there, so without this a program with more
 * distinct stacks than the map holds lost every later one (the scale
 * workload with 131,072 stacks, recorded through BPF, lost 54% of its
 * stacks to the map being full, and the frame-pointer fallback's map after
 * it).  A key is a 48-bit hash of the frames: a different stack taking a
 * freed key, of the ones already read, is a chance of one in 2^48 a pair. */
void mtb_stacks_prune(struct mt_bpf *b)
{
	enum { BATCH = 256 };
	uint64_t out = 0, *in = NULL;

	if (!b->dwarf || b->fd_ustacks < 0)
		return;
	uint64_t *keys = xmalloc(BATCH * sizeof(*keys));
	struct mtb_ustack *vals = xmalloc(BATCH * sizeof(*vals));
	for (;;) {
		__u32 count = BATCH;
		int r = bpf_map_lookup_and_delete_batch(b->fd_ustacks, in, &out, keys, vals, &count,
							NULL);
		int more = r == 0;

		if (r && errno != ENOENT) /* no batch operations (before Linux 5.6) */
			break;
		for (__u32 i = 0; i < count; i++) {
			uint64_t kstack = MTB_KSTACK_DWARF | keys[i], id;

			if (vals[i].n > MTB_MAX_FRAMES)
				vals[i].n = 0;
			if (!mt_ptrmap_get(&b->callkey, kstack, &id))
				ustack_uid(b, kstack, &vals[i], 0);
		}
		if (!more)
			break;
		in = &out;
	}
	free(keys);
	free(vals);
}

uint64_t mtb_stack_uid(struct mt_bpf *b, uint64_t kstack, uint64_t caller)
{
	uint64_t id;

	if (kstack & MTB_KSTACK_DWARF) {
		if (mt_ptrmap_get(&b->callkey, kstack, &id))
			return id;
		return dwarf_uid(b, kstack, caller);
	}

	if (!(kstack & (MTB_KSTACK_SKIP1 | MTB_KSTACK_CALLER)))
		return kernel_uid(b, (uint32_t)kstack, caller);
	if (mt_ptrmap_get(&b->callkey, kstack, &id))
		return id;
	if (kstack & MTB_KSTACK_SKIP1)
		return skip1_uid(b, kstack, caller);
	/* MTB_KSTACK_CALLER: the caller's address alone (and a key never 0) */
	uint64_t pc = kstack & ~MTB_KSTACK_CALLER;

	id = intern(b, &pc, 1);
	mt_ptrmap_xput(&b->callkey, kstack, id);
	return id;
}

int mt_bpf_stack(struct mt_bpf *b, uint64_t stack_id, const uint64_t **frames, unsigned *nframes)
{
	if (!stack_id || stack_id > b->nstacks)
		return -1;
	*frames = b->stacks[stack_id - 1].frames;
	*nframes = b->stacks[stack_id - 1].n;
	return 0;
}

/* All CPUs' count of stacks put in ustacks, or 0 if not known. */
static uint64_t ustk_inserted(struct mt_bpf *b)
{
	uint64_t v[512], sum = 0;
	uint32_t zero = 0;
	int ncpu = libbpf_num_possible_cpus();

	if (b->fd_ustk_ins < 0 || ncpu <= 0 || ncpu > 512 ||
	    bpf_map_lookup_elem(b->fd_ustk_ins, &zero, v))
		return 0;
	for (int i = 0; i < ncpu; i++)
		sum += v[i];
	return sum;
}

/* Empties ustacks when the programs have filled half of it since it was
 * last emptied (whatever the events read so far say: once it has been
 * emptied, the programs put again every stack they meet, known to us or
 * not).  A stack the programs find gone costs them an insert again, so
 * not sooner. */
void mtb_stacks_check(struct mt_bpf *b)
{
	if (!b->dwarf)
		return;
	uint64_t n = ustk_inserted(b);

	if (n - b->ustk_pruned >= b->o.max_stacks / 2) {
		mtb_stacks_prune(b);
		b->ustk_pruned = n;
	}
}
