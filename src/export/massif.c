/*
 * massif.c - valgrind massif's out file, for ms_print and
 * massif-visualizer: the heap over time as a series of snapshots, some with
 * a tree of where the live bytes were allocated (from the allocating
 * function outwards to main, as massif draws it).
 *
 * One process per file.  The events are replayed in time order; a snapshot
 * is taken at every fiftieth of the run (at least every millisecond, the
 * time unit) that the events pass, one at the global peak (heap_tree=peak,
 * from the figures' peak and per-site figures, so that it agrees with
 * `memtrace report`) and one at the end (what leaked); every tenth and the
 * last are detailed.  Tree nodes are frames (inlined functions are frames
 * of their own), out to main (the C library's start-up below it is left
 * out) or 30 levels; children below 1% of the snapshot's heap fold into one
 * node.  These are massif's defaults (--detailed-freq, --depth, --threshold).
 *
 * Memory: per-site live bytes, the sites' frames, the live blocks.
 */
#include "export.h"
#include "base/hash.h"
#include "base/ptrmap.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#define SNAPSHOTS 50	 /* regular snapshots over the run, about */
#define DETAILED_FREQ 10 /* every tenth snapshot is detailed, as massif's --detailed-freq */
#define THRESHOLD_PCT 1	 /* massif's --threshold default */
#define MAX_DEPTH 30	 /* massif's --depth default */

struct ms_frame {
	struct mt_frame f;
	unsigned pos; /* from the real function inwards through the inlined ones */
	int startup;  /* the C library's start-up, below main: massif hides it */
};

struct ms {
	FILE *out;
	const struct mt_process *p;
	size_t proc; /* index in sel->matched.procs */
	struct mt_symbolizer *sym;

	struct ms_frame *frames; /* the distinct frames */
	size_t nframes, frames_cap;
	struct mt_ptrmap frame_keys; /* hash of (address, pos) (probed) -> frame + 1 */
	uint32_t *ids;		     /* frames of every site, leaf first */
	size_t nids, ids_cap;
	size_t *site_off;
	uint32_t *site_len;

	uint64_t *site_live; /* live bytes per site, during the replay */
	uint64_t live;
	struct mt_ptrmap live_size, live_site; /* block -> its size, its site */

	unsigned nsnap;
	int peak_done;
	uint64_t base_ts, step, next_ts, last_ts;
	uint32_t *scratch; /* site indices, for the trees */
};

/* ---- the sites' frames ---- */

static int is_startup(const char *fn)
{
	static const char *const names[] = { "__libc_start_call_main", "__libc_start_main",
					     "__libc_start_main_impl", "_start" };
	for (size_t i = 0; fn && i < sizeof names / sizeof *names; i++)
		if (!strcmp(fn, names[i]))
			return 1;
	return 0;
}

static uint32_t frame_id(struct ms *m, const struct mt_frame *f, unsigned pos)
{
	uint64_t v, key = mt_hash_combine(mt_hash64(f->address), pos) | 1;
	/* keys of different frames that hash alike are told apart by probing */
	for (; mt_ptrmap_get(&m->frame_keys, key, &v); key += 2)
		if (m->frames[v - 1].f.address == f->address && m->frames[v - 1].pos == pos)
			return (uint32_t)(v - 1);
	mt_grow(&m->frames, &m->frames_cap, m->nframes, sizeof *m->frames);
	m->frames[m->nframes] = (struct ms_frame){ *f, pos, is_startup(f->function) };
	mt_ptrmap_xput(&m->frame_keys, key, ++m->nframes);
	return (uint32_t)(m->nframes - 1);
}

static void load_site(struct ms *m, uint32_t site, struct mt_frame *fr)
{
	int n = mt_site_frames(m->p, m->sym, site, fr, MT_SYM_MAX_FRAMES);
	if (n < 0)
		n = 0;
	m->site_off[site] = m->nids;
	m->site_len[site] = (uint32_t)n;
	for (int k = 0; k < n; k++) {
		/* the position counts from the real function, which the
		 * dropping of allocator frames at the leaf does not move */
		int real = k;
		while (real < n - 1 && fr[real].inlined)
			real++;
		mt_grow(&m->ids, &m->ids_cap, m->nids, sizeof *m->ids);
		m->ids[m->nids++] = frame_id(m, &fr[k], (unsigned)(real - k));
	}
}

static void load_sites(struct ms *m)
{
	uint32_t n = m->p->figures.nsites;
	struct mt_frame *fr = xmalloc(MT_SYM_MAX_FRAMES * sizeof *fr);
	m->site_off = xcalloc(n ? n : 1, sizeof *m->site_off);
	m->site_len = xcalloc(n ? n : 1, sizeof *m->site_len);
	m->site_live = xcalloc(n ? n : 1, sizeof *m->site_live);
	m->scratch = xcalloc(n ? n : 1, sizeof *m->scratch);
	for (uint32_t s = 0; s < n; s++)
		load_site(m, s, fr);
	free(fr);
}

/* ---- heap trees ---- */

struct keyed {
	uint32_t key, site;
};

struct group {
	uint32_t id;
	size_t start, count;
	uint64_t bytes;
};

static int by_key(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int by_bytes(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

/* Groups SITES[0..n) by their frame at DEPTH, biggest first; sites whose
 * stack ends above DEPTH (or reaches the start-up there) are in no group.
 * Reorders SITES. */
static struct group *group_sites(struct ms *m, uint32_t *sites, size_t n, unsigned depth,
				 const uint64_t *bytes, size_t *ngroups)
{
	struct keyed *k = xmalloc((n ? n : 1) * sizeof *k);
	for (size_t i = 0; i < n; i++) {
		uint32_t s = sites[i];
		k[i].site = s;
		k[i].key = depth < m->site_len[s] ? m->ids[m->site_off[s] + depth] : UINT32_MAX;
		if (k[i].key != UINT32_MAX && m->frames[k[i].key].startup)
			k[i].key = UINT32_MAX;
	}
	if (n)
		qsort(k, n, sizeof *k, by_key);
	struct group *g = xmalloc((n ? n : 1) * sizeof *g);
	size_t ng = 0;
	for (size_t i = 0; i < n; i++) {
		sites[i] = k[i].site;
		if (k[i].key == UINT32_MAX)
			continue;
		if (!ng || g[ng - 1].id != k[i].key)
			g[ng++] = (struct group){ k[i].key, i, 0, 0 };
		g[ng - 1].count++;
		g[ng - 1].bytes += bytes[k[i].site];
	}
	free(k);
	if (ng)
		qsort(g, ng, sizeof *g, by_bytes);
	*ngroups = ng;
	return g;
}

static void put_text(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
}

/* "0xADDR: function (file:line)", as valgrind names a code address. */
static void put_frame(FILE *f, const struct mt_frame *fr)
{
	char name[512];
	fprintf(f, "0x%llX: ", (unsigned long long)fr->address);
	/* no function: module+0xoffset, as every output names such a frame */
	put_text(f, fr->module || fr->function ? mt_frame_label(fr, name, sizeof name) : "???");
	if (fr->file) {
		const char *base = strrchr(fr->file, '/');
		fputs(" (", f);
		put_text(f, base ? base + 1 : fr->file);
		fprintf(f, ":%d)", fr->line);
	} else if (fr->module) {
		fputs(" (in ", f);
		put_text(f, fr->module);
		fputc(')', f);
	}
}

static int significant(uint64_t bytes, uint64_t total)
{
	return bytes && bytes * 100 >= total * THRESHOLD_PCT;
}

/* A node of BYTES over SITES[0..n), which share their frames above DEPTH;
 * FRAME is the node's own (NULL: the root), then its children. */
static void write_node(struct ms *m, uint32_t *sites, size_t n, unsigned depth,
		       const struct mt_frame *frame, uint64_t bytes, const uint64_t *site_bytes,
		       uint64_t total)
{
	size_t ng = 0, nsig = 0;
	struct group *g = group_sites(m, sites, depth < MAX_DEPTH ? n : 0, depth, site_bytes, &ng);
	uint64_t below = 0;
	for (size_t i = 0; i < ng; i++) {
		if (significant(g[i].bytes, total))
			nsig++;
		else
			below += g[i].bytes;
	}
	size_t nbelow = ng - nsig;
	fprintf(m->out, "%*sn%zu: %llu ", (int)depth, "", nsig + (nbelow > 0),
		(unsigned long long)bytes);
	if (frame)
		put_frame(m->out, frame);
	else
		fputs("(heap allocation functions) malloc/new/new[], --alloc-fns, etc.", m->out);
	fputc('\n', m->out);
	for (size_t i = 0; i < nsig; i++)
		write_node(m, sites + g[i].start, g[i].count, depth + 1, &m->frames[g[i].id].f,
			   g[i].bytes, site_bytes, total);
	if (nbelow)
		fprintf(m->out,
			"%*sn0: %llu in %zu place%s, %sbelow massif's threshold (%d.00%%)\n",
			(int)depth + 1, "", (unsigned long long)below, nbelow,
			nbelow == 1 ? "" : "s", nbelow == 1 ? "" : "all ", THRESHOLD_PCT);
	free(g);
}

static void write_tree(struct ms *m, const uint64_t *site_bytes, uint64_t total)
{
	size_t n = 0;
	uint64_t sum = 0;
	for (uint32_t s = 0; s < m->p->figures.nsites; s++)
		if (site_bytes[s]) {
			m->scratch[n++] = s;
			sum += site_bytes[s];
		}
	/* ms_print refuses a node bigger than the snapshot */
	write_node(m, m->scratch, n, 0, NULL, sum < total ? sum : total, site_bytes, total);
}

/* ---- snapshots ---- */

enum snap_kind { SNAP_PLAIN, SNAP_DETAILED, SNAP_PEAK };

static void snapshot(struct ms *m, uint64_t ts, uint64_t heap, enum snap_kind kind,
		     const uint64_t *site_bytes)
{
	uint64_t msec = ts > m->base_ts ? (ts - m->base_ts) / 1000000 : 0;
	if (kind == SNAP_PLAIN && m->nsnap % DETAILED_FREQ == DETAILED_FREQ - 1)
		kind = SNAP_DETAILED;
	fprintf(m->out,
		"#-----------\nsnapshot=%u\n#-----------\ntime=%llu\nmem_heap_B=%llu\n"
		"mem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=%s\n",
		m->nsnap++, (unsigned long long)msec, (unsigned long long)heap,
		kind == SNAP_PEAK     ? "peak" :
		kind == SNAP_DETAILED ? "detailed" :
					"empty");
	if (kind != SNAP_PLAIN)
		write_tree(m, site_bytes, heap);
}

/* The peak as the figures saw it: its total and each site's share. */
static void snapshot_peak(struct ms *m)
{
	const struct mt_figures *c = &m->p->figures;
	uint64_t *bytes = xcalloc(c->nsites ? c->nsites : 1, sizeof *bytes);
	for (uint32_t s = 0; s < c->nsites; s++)
		bytes[s] = c->sites[s].peak_bytes;
	snapshot(m, c->t.peak_ts, c->t.peak_bytes, SNAP_PEAK, bytes);
	free(bytes);
	m->peak_done = 1;
}

/* Before an event at TS: the state so far, at each step of the time grid
 * that it held through. */
static void before_event(struct ms *m, uint64_t ts)
{
	if (ts > m->last_ts)
		m->last_ts = ts;
	/* a peak that the events never reach (culled allocations made it) */
	if (!m->peak_done && m->p->figures.t.peak_bytes && ts > m->p->figures.t.peak_ts)
		snapshot_peak(m);
	for (; ts >= m->next_ts; m->next_ts += m->step)
		snapshot(m, m->next_ts, m->live, SNAP_PLAIN, m->site_live);
}

static void on_alloc(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr, uint64_t size,
		     uint32_t site)
{
	(void)tid;
	struct ms *m = ctx;
	if (proc != m->proc || site >= m->p->figures.nsites)
		return;
	before_event(m, ts);
	uint64_t old, old_site;
	/* allocated again without a free we saw: the figures free the old one */
	if (mt_ptrmap_take(&m->live_size, ptr, &old) &&
	    mt_ptrmap_take(&m->live_site, ptr, &old_site)) {
		m->site_live[old_site] -= old;
		m->live -= old;
	}
	mt_ptrmap_xput(&m->live_size, ptr, size);
	mt_ptrmap_xput(&m->live_site, ptr, site);
	m->site_live[site] += size;
	m->live += size;
	if (!m->peak_done && m->live == m->p->figures.t.peak_bytes)
		snapshot_peak(m);
}

static void on_free(void *ctx, size_t proc, uint64_t ts, uint32_t tid, uint64_t ptr)
{
	(void)tid;
	struct ms *m = ctx;
	if (proc != m->proc)
		return;
	before_event(m, ts);
	uint64_t size, site;
	if (mt_ptrmap_take(&m->live_size, ptr, &size) &&
	    mt_ptrmap_take(&m->live_site, ptr, &site)) {
		m->site_live[site] -= size;
		m->live -= size;
	}
}

/* ---- the file ---- */

static void write_header(struct ms *m, const char *path)
{
	const struct mt_process *p = m->p;
	fputs("desc: memtrace export --format massif ", m->out);
	put_text(m->out, path ? path : "");
	fputs("\ncmd:", m->out);
	for (int i = 0; i < p->argc; i++) {
		fputc(' ', m->out);
		put_text(m->out, p->argv[i]);
	}
	if (p->argc <= 0) {
		fputc(' ', m->out);
		put_text(m->out, p->exe ? p->exe : "?");
	}
	fputs("\ntime_unit: ms\n", m->out);
}

static void ms_free(struct ms *m)
{
	mt_ptrmap_destroy(&m->frame_keys);
	mt_ptrmap_destroy(&m->live_size);
	mt_ptrmap_destroy(&m->live_site);
	free(m->frames);
	free(m->ids);
	free(m->site_off);
	free(m->site_len);
	free(m->site_live);
	free(m->scratch);
	if (m->sym)
		mt_sym_free(m->sym);
	free(m);
}

int mt_export_massif(struct mt_export_ctx *x, char *err, size_t errlen)
{
	struct ms *m = xcalloc(1, sizeof *m);
	int r = -1;
	m->out = x->out;
	if (!(m->p = mt_export_one_process(x, "massif", &m->proc))) {
		snprintf(err, errlen, "the recording holds no process");
		goto out;
	}
	if (mt_ptrmap_init(&m->frame_keys, 1024) | mt_ptrmap_init(&m->live_size, 1024) |
	    mt_ptrmap_init(&m->live_site, 1024)) {
		snprintf(err, errlen, "massif: out of memory");
		goto out;
	}
	const struct mt_process *p = m->p;
	m->sym = mt_process_symbolizer(p);
	load_sites(m);
	m->base_ts = p->start_ts;
	uint64_t end = p->end_ts > p->figures.t.last_ts ? p->end_ts : p->figures.t.last_ts;
	m->step = end > p->start_ts ? (end - p->start_ts) / SNAPSHOTS : 0;
	if (m->step < 1000000)
		m->step = 1000000; /* the time unit: no two snapshots in one millisecond */
	write_header(m, x->sel->path);
	snapshot(m, p->start_ts, 0, SNAP_PLAIN, m->site_live);
	m->next_ts = p->start_ts + m->step;
	m->last_ts = p->start_ts;
	struct mt_replay_ops ops = { on_alloc, on_free, m };
	if (mt_select_replay(x->sel, &ops, err, errlen) < 0)
		goto out;
	if (!m->peak_done && p->figures.t.peak_bytes)
		snapshot_peak(m);
	snapshot(m, end > m->last_ts ? end : m->last_ts, m->live, SNAP_DETAILED, m->site_live);
	r = 0;
out:
	ms_free(m);
	return r;
}
