/*
 * livescan.c - see livescan.h.
 */
#include "livescan.h"
#include "base/clock.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gather {
	struct mt_live_block *v;
	size_t n, cap;
};

static void add_block(void *ctx, const struct mt_bpf_block *blk)
{
	struct gather *g = ctx;
	mt_grow(&g->v, &g->cap, g->n, sizeof *g->v);
	g->v[g->n++] =
		(struct mt_live_block){ blk->ptr, blk->size, blk->stack_id, blk->ts, blk->weight };
}

static int by_addr(const void *a, const void *b)
{
	const struct mt_live_block *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int mt_live_scan(struct mt_bpf *b, pid_t pid, struct mt_live_scan *out)
{
	memset(out, 0, sizeof *out);
	out->pid = pid;
	uint64_t t0 = mt_now_ns();
	struct mt_stopped st;
	if (mt_threads_stop(&st, pid, out->res.why, sizeof out->res.why) < 0)
		return -1;
	/* held: the live map changes no more (a thread stopped inside
	 * malloc has its block in a register, not yet in the map: unknown,
	 * so no candidate) */
	struct gather g = { 0 };
	int r = mt_bpf_read_live(b, (uint32_t)pid, add_block, &g);
	struct mt_scan_block *sb = NULL;
	if (r >= 0) {
		if (g.n)
			qsort(g.v, g.n, sizeof *g.v, by_addr);
		sb = xmalloc((g.n ? g.n : 1) * sizeof *sb);
		for (size_t i = 0; i < g.n; i++)
			sb[i] = (struct mt_scan_block){ g.v[i].addr, g.v[i].size };
		out->kinds = xmalloc(g.n ? g.n : 1);
		struct mt_scan_opts o = { .heap_gaps_are_roots = 1 };
		r = mt_scan_process(&st, sb, g.n, &o, out->kinds, &out->res);
		out->res.sampled = mt_bpf_sample_mean(b) != 0;
	} else {
		snprintf(out->res.why, sizeof out->res.why, "cannot read the kernel's live blocks");
	}
	mt_threads_resume(&st);
	out->res.ns = mt_now_ns() - t0; /* the whole hold, not the scan alone */
	free(sb);
	out->blocks = g.v;
	out->n = g.n;
	out->ran = r >= 0;
	return r >= 0 ? 0 : -1;
}

void mt_live_scan_all(struct mt_bpf *b, const pid_t *pids, size_t n, struct mt_live_scan *scans)
{
	for (size_t i = 0; i < n; i++) {
		int64_t st;
		if (mt_bpf_exit_status(b, (uint32_t)pids[i], &st, NULL)) {
			scans[i] = (struct mt_live_scan){ .pid = pids[i] };
			snprintf(scans[i].res.why, sizeof scans[i].res.why, "it has exited");
		} else {
			mt_live_scan(b, pids[i], &scans[i]);
		}
		mt_scan_say(scans[i].pid, scans[i].ran, &scans[i].res);
	}
}

/* Makes a site's figures of each kind V add up to WANT, its leaked figure
 * in the snapshot, read after the scan while the process ran on: what was
 * allocated since, the scan did not see (still reachable: never a false
 * leak); what was freed since was reachable or possibly lost (nothing can
 * free a lost block: nothing points at it), taken off those first.  (A
 * site of stdio's buffers, held by the runtime, wants 0.) */
static void settle(uint64_t v[MT_LEAK_KINDS], uint64_t want)
{
	static const int order[] = { MT_LEAK_REACHABLE, MT_LEAK_POSSIBLE, MT_LEAK_INDIRECT,
				     MT_LEAK_DEFINITE };
	uint64_t have = 0;
	for (int kd = 0; kd < MT_LEAK_KINDS; kd++)
		have += v[kd];
	if (have <= want) {
		v[MT_LEAK_REACHABLE] += want - have;
		return;
	}
	uint64_t over = have - want;
	for (size_t i = 0; i < sizeof order / sizeof *order && over; i++) {
		uint64_t take = v[order[i]] < over ? v[order[i]] : over;
		v[order[i]] -= take;
		over -= take;
	}
}

void mt_live_scan_apply(const struct mt_live_scan *s, struct mt_bpf *b, struct mt_process *p,
			uint64_t before)
{
	if (!s->ran)
		return;
	/* each block's site first: one not in the snapshot yet adds a site */
	uint32_t *site = xmalloc((s->n ? s->n : 1) * sizeof *site);
	for (size_t i = 0; i < s->n; i++) {
		const uint64_t *fr = NULL;
		unsigned nf = 0;
		uint64_t none = 0;
		if (mt_bpf_stack(b, s->blocks[i].stack_id, &fr, &nf) < 0 || !nf) {
			fr = &none;
			nf = 1;
		}
		site[i] = mt_process_site(p, fr, nf < MT_MAX_FRAMES ? nf : MT_MAX_FRAMES);
	}
	struct mt_leak_kinds *k = &p->kinds;
	mt_leak_kinds_free(k);
	k->ran = 1;
	k->scan = (struct mt_scan_summary){ .ns = s->res.ns,
					    .scanned = s->res.scanned,
					    .roots = s->res.roots,
					    .complete = (uint32_t)s->res.complete };
	k->why = s->res.complete ? NULL : xstrdup(s->res.why);
	k->nsites = p->figures.nsites;
	k->sites = xcalloc(k->nsites ? k->nsites : 1, sizeof *k->sites);
	/* counts in 16.16 first: a sampled block stands for its weight */
	for (size_t i = 0; i < s->n; i++) {
		if (before && s->blocks[i].ts >= before)
			continue;
		unsigned kind = s->res.complete ? s->kinds[i] : MT_LEAK_REACHABLE;
		const struct mt_live_block *bl = &s->blocks[i];
		k->sites[site[i]].count[kind] += bl->weight;
		k->sites[site[i]].bytes[kind] += (bl->size * bl->weight) >> 16;
	}
	for (size_t i = 0; i < k->nsites; i++)
		for (int kd = 0; kd < MT_LEAK_KINDS; kd++)
			k->sites[i].count[kd] = (k->sites[i].count[kd] + (1u << 15)) >> 16;
	free(site);
	/* the kinds of a site add up to its leaked figures (counts and
	 * bytes alike) */
	memset(&k->total, 0, sizeof k->total);
	for (size_t i = 0; i < k->nsites; i++) {
		struct mt_kind_figures *f = &k->sites[i];
		const struct mt_site_stats *st = &p->figures.sites[i];
		settle(f->count, st->live_count);
		settle(f->bytes, st->live_bytes);
		for (int kd = 0; kd < MT_LEAK_KINDS; kd++) {
			k->total.count[kd] += f->count[kd];
			k->total.bytes[kd] += f->bytes[kd];
		}
	}
}

void mt_live_scan_free(struct mt_live_scan *s)
{
	free(s->blocks);
	free(s->kinds);
	memset(s, 0, sizeof *s);
}
