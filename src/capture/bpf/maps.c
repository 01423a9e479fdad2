/*
 * maps.c - what the BPF capture layer reads from and drops in the BPF maps:
 * the walk over a map by batches, the per-site totals (sites and live
 * blocks, mt_bpf_read_sites), the loss counters (stats, and the missed
 * returns of threads that died inside a call, noticed here), and dropping
 * what a process left behind.  Uses stacks.c for the sites' stacks; calls
 * nothing else of the layer.
 */
#include "capture_int.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/util.h"
#include "memtrace.skel.h"
#include "base/clock.h"

/* ---- walking a map ---------------------------------------------------- */

/* Batches of lookups: 0 when done, 1 when the kernel has no batch
 * operations for the map (walk it one key at a time), -1 with errno. */
static int walk_batches(int fd, size_t ksz, size_t vsz, char **keys, char **vals,
			int (*fn)(void *ctx, const void *key, const void *val), void *ctx)
{
	uint32_t cap = 16384;
	uint64_t in = 0, outb = 0;
	void *inp = NULL;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	for (;;) {
		uint32_t count = cap;
		int err = bpf_map_lookup_batch(fd, inp, &outb, *keys, *vals, &count, &opts);
		int e = err ? errno : 0;

		if (err && e == ENOSPC && count == 0) {
			/* One bucket holds more than a batch: bigger batch. */
			cap *= 4;
			*keys = xrealloc(*keys, cap * ksz);
			*vals = xrealloc(*vals, cap * vsz);
			continue;
		}
		if (err && e != ENOENT) {
			if (!inp && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP))
				return 1;
			errno = e;
			return -1;
		}
		for (uint32_t i = 0; i < count; i++)
			if (fn(ctx, *keys + i * ksz, *vals + i * vsz))
				return 0;
		if (err) /* ENOENT: that was the last batch */
			return 0;
		in = outb;
		inp = &in;
	}
}

int mtb_map_walk(int fd, size_t ksz, size_t vsz,
		 int (*fn)(void *ctx, const void *key, const void *val), void *ctx)
{
	/* room for a first batch, and for two keys of the one-by-one walk */
	char *keys = xmalloc(16384 * ksz), *vals = xmalloc(16384 * vsz);
	int ret = walk_batches(fd, ksz, vsz, &keys, &vals, fn, ctx);

	if (ret == 1) {
		/* get_next_key walk (kernels without batch lookups for this map). */
		char *k = keys, *next = keys + ksz;
		int first = 1;

		ret = 0;
		while (bpf_map_get_next_key(fd, first ? NULL : k, next) == 0) {
			first = 0;
			memcpy(k, next, ksz);
			if (bpf_map_lookup_elem(fd, k, vals) == 0 && fn(ctx, k, vals))
				break;
		}
	}
	free(keys);
	free(vals);
	return ret;
}

/* ---- sites ------------------------------------------------------------ */

struct site_acc {
	uint32_t pid;
	uint32_t object;
	int fn;
	uint64_t uid;
	uint64_t out_bytes, out_allocs, allocs, bytes, culled, oldest;
};

struct sites_walk {
	struct mt_bpf *b;
	struct mt_ptrmap idx; /* (pid << 32 | uid) + 1 -> index + 1 */
	struct site_acc *acc;
	size_t n, cap;
	uint64_t now, min_age;
};

static struct site_acc *acc_get(struct sites_walk *w, uint32_t pid, uint64_t uid)
{
	/* + 1: pid and uid may both be 0, and the map's keys never are */
	uint64_t key = ((uint64_t)pid << 32 | uid) + 1, v;

	if (mt_ptrmap_get(&w->idx, key, &v))
		return &w->acc[v - 1];
	mt_grow(&w->acc, &w->cap, w->n, sizeof(*w->acc));
	w->acc[w->n] = (struct site_acc){
		.pid = pid,
		.uid = uid,
		.object = UINT32_MAX,
		.fn = -1,
	};
	mt_ptrmap_xput(&w->idx, key, ++w->n);
	return &w->acc[w->n - 1];
}

static int site_cb(void *ctx, const void *key, const void *val)
{
	struct sites_walk *w = ctx;
	const struct mtb_site_key *k = key;
	const struct mtb_site *v = val;
	struct site_acc *a = acc_get(w, k->tgid, mtb_stack_uid(w->b, k->kstack, 0));

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
	struct site_acc *a = acc_get(w, k->tgid, mtb_stack_uid(w->b, v->kstack, 0));

	/* (sampling: its weight, 16.16, as the sites' counts) */
	a->out_allocs += w->b->o.sample_mean ? v->weight : 1;
	a->out_bytes += w->b->o.sample_mean ? (v->size * v->weight) >> 16 : v->size;
	if (!a->oldest || v->ts < a->oldest)
		a->oldest = v->ts;
	return 0;
}

static void deliver_sites(struct sites_walk *w, void (*fn)(void *ctx, const struct mt_bpf_site *s),
			  void *ctx)
{
	/* sampling: the counts are the blocks' weights, in 16.16 */
	unsigned shift = w->b->o.sample_mean ? 16 : 0;
	uint64_t half = shift ? 1u << 15 : 0;
	for (size_t i = 0; i < w->n; i++) {
		const struct site_acc *a = &w->acc[i];
		struct mt_bpf_site s = {
			.pid = a->pid,
			.stack_id = a->uid,
			.outstanding_bytes = a->out_bytes,
			.outstanding_allocations = (a->out_allocs + half) >> shift,
			.allocations = (a->allocs + half) >> shift,
			.allocated_bytes = a->bytes,
			.culled = (a->culled + half) >> shift,
			.oldest_ts = a->oldest,
			.object = a->object,
			.fn = a->fn,
		};
		mt_bpf_stack(w->b, a->uid, &s.frames, &s.nframes);
		fn(ctx, &s);
	}
}

int mt_bpf_read_sites(struct mt_bpf *b, uint64_t min_age_ns,
		      void (*fn)(void *ctx, const struct mt_bpf_site *s), void *ctx)
{
	struct sites_walk w = { .b = b, .min_age = min_age_ns };
	struct timespec ts;

	mt_ptrmap_xinit(&w.idx, 64);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	w.now = mt_timespec_ns(ts);
	int ret = mtb_map_walk(b->fd_sites, sizeof(struct mtb_site_key), sizeof(struct mtb_site),
			       site_cb, &w);

	if (ret == 0 && min_age_ns)
		ret = mtb_map_walk(b->fd_live, sizeof(struct mtb_live_key), sizeof(struct mtb_live),
				   live_cb, &w);
	if (ret == 0) {
		deliver_sites(&w, fn, ctx);
		ret = (int)w.n;
	}
	free(w.acc);
	mt_ptrmap_destroy(&w.idx);
	return ret;
}

/* ---- the live blocks of a process ------------------------------------- */

struct live_walk {
	struct mt_bpf *b;
	uint32_t pid;
	void (*fn)(void *ctx, const struct mt_bpf_block *blk);
	void *ctx;
	size_t n;
};

static int block_cb(void *ctx, const void *key, const void *val)
{
	struct live_walk *w = ctx;
	const struct mtb_live_key *k = key;
	const struct mtb_live *v = val;
	if (k->tgid != w->pid)
		return 0;
	struct mt_bpf_block blk = {
		.ptr = k->ptr,
		.size = v->size,
		.stack_id = mtb_stack_uid(w->b, v->kstack, 0),
		.ts = v->ts,
		.weight = w->b->o.sample_mean ? v->weight : MTB_SAMPLE_ONE,
	};
	w->fn(w->ctx, &blk);
	w->n++;
	return 0;
}

int mt_bpf_read_live(struct mt_bpf *b, uint32_t pid,
		     void (*fn)(void *ctx, const struct mt_bpf_block *blk), void *ctx)
{
	struct live_walk w = { .b = b, .pid = pid, .fn = fn, .ctx = ctx };
	int ret = mtb_map_walk(b->fd_live, sizeof(struct mtb_live_key), sizeof(struct mtb_live),
			       block_cb, &w);
	return ret < 0 ? -1 : (int)w.n;
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

static void add_missed(struct mt_bpf *b, uint32_t tgid, uint64_t n)
{
	for (size_t i = 0; i < b->nmissed; i++)
		if (b->missed[i].tgid == tgid) {
			b->missed[i].n += n;
			return;
		}
	mt_grow(&b->missed, &b->capmissed, b->nmissed, sizeof(*b->missed));
	b->missed[b->nmissed++] = (struct mtb_missed){ .tgid = tgid, .n = n };
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
	lost[MT_LOST_STACK] = c[MTB_ST_STACK_ERROR] + c[MTB_ST_UW_BUSY];
	lost[MT_LOST_MAP_FULL] += c[MTB_ST_UW_MAP_FULL];
	lost[MT_LOST_STACK_NO_TABLE] = c[MTB_ST_UW_NO_TABLE] + c[MTB_ST_UW_LOST_FRAME];
	lost[MT_LOST_STACK_FAULT] = c[MTB_ST_UW_FAULT];
	lost[MT_LOST_STACK_TRUNCATED] = c[MTB_ST_UW_DEPTH];
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

/* Fresh counters for a process traced anew. */
void mtb_reset_stats(struct mt_bpf *b, uint32_t tgid)
{
	bpf_map_delete_elem(b->fd_stats, &tgid);
	mtb_lean_forget(b, tgid);
	for (size_t i = 0; i < b->nmissed; i++)
		if (b->missed[i].tgid == tgid)
			b->missed[i].n = 0;
}

/* ---- call slots ------------------------------------------------------- */

/* Frees call slot C if it still holds OWN; 1 if it did. */
static int release_slot(struct mtb_call *c, uint64_t own)
{
	return own &&
	       __atomic_compare_exchange_n(&c->own, &own, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static int thread_alive(uint32_t tgid, uint32_t tid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u/task/%u", tgid, tid);
	return stat(path, &st) == 0;
}

void mtb_reap_dead_threads(struct mt_bpf *b)
{
	for (uint32_t i = 0; i < b->nslots; i++) {
		struct mtb_call *c = &b->calls[i];
		uint64_t own = __atomic_load_n(&c->own, __ATOMIC_ACQUIRE);

		if (!own)
			continue;
		uint32_t tgid = c->tgid;
		uint64_t nested = c->nested;

		if (thread_alive(tgid, MTB_OWN_TID(own)) || !release_slot(c, own))
			continue;
		add_missed(b, tgid, 1 + nested);
	}
}

/* ---- dropping a process ----------------------------------------------- */

/* Every process of a rescan that found several gone is dropped in one walk
 * of each map: one walk per process made a sweep on a busy machine (where
 * compilers come and go by the dozen) spend minutes in its rescans, deaf
 * to Ctrl-C. */
struct drop_walk {
	const struct mt_ptrmap *tgids; /* tgid + 1 -> 1 */
	size_t ksz;
	size_t tgid_off;
	char *keys;
	size_t n, cap;
};

static int drop_cb(void *ctx, const void *key, const void *val)
{
	struct drop_walk *w = ctx;
	uint32_t t;
	uint64_t v;

	(void)val;
	memcpy(&t, (const char *)key + w->tgid_off, sizeof(t));
	if (!mt_ptrmap_get(w->tgids, (uint64_t)t + 1, &v))
		return 0;
	mt_grow(&w->keys, &w->cap, (w->n + 1) * w->ksz - 1, 1);
	memcpy(w->keys + w->n * w->ksz, key, w->ksz);
	w->n++;
	return 0;
}

static void drop_keys(int fd, size_t ksz, size_t vsz, size_t tgid_off,
		      const struct mt_ptrmap *tgids)
{
	struct drop_walk w = { .tgids = tgids, .ksz = ksz, .tgid_off = tgid_off };

	if (mtb_map_walk(fd, ksz, vsz, drop_cb, &w) == 0)
		for (size_t i = 0; i < w.n; i++)
			bpf_map_delete_elem(fd, w.keys + i * ksz);
	free(w.keys);
}

void mtb_drop_processes(struct mt_bpf *b, const uint32_t *tgid, size_t n)
{
	struct mt_ptrmap set;
	uint64_t v;
	size_t slots = 16;

	if (!n)
		return;
	while (slots < 2 * n)
		slots *= 2;
	mt_ptrmap_xinit(&set, slots);
	for (size_t i = 0; i < n; i++)
		mt_ptrmap_xput(&set, (uint64_t)tgid[i] + 1, 1);
	drop_keys(b->fd_live, sizeof(struct mtb_live_key), sizeof(struct mtb_live),
		  offsetof(struct mtb_live_key, tgid), &set);
	drop_keys(b->fd_sites, sizeof(struct mtb_site_key), sizeof(struct mtb_site),
		  offsetof(struct mtb_site_key, tgid), &set);
	for (uint32_t i = 0; i < b->nslots; i++) {
		struct mtb_call *c = &b->calls[i];
		uint64_t own = __atomic_load_n(&c->own, __ATOMIC_ACQUIRE);

		if (own && mt_ptrmap_get(&set, (uint64_t)c->tgid + 1, &v))
			release_slot(c, own);
	}
	mt_ptrmap_destroy(&set);
}

void mtb_drop_process(struct mt_bpf *b, uint32_t tgid)
{
	mtb_drop_processes(b, &tgid, 1);
}

void mtb_set_trace_all(struct mt_bpf *b, int on)
{
	b->skel->bss->trace_all = on ? 1 : 0;
}
