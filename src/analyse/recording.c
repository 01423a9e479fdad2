/*
 * recording.c - see recording.h.
 */
#include "recording.h"
#include "chunks.h"
#include "runtime_held.h"
#include "objects.h"
#include "managed.h"
#include "base/hash.h"
#include "base/ptrmap.h"
#include "base/slots.h"
#include "format/format.h"
#include "format/signum.h"
#include "base/progress.h"
#include "base/util.h"
#include "base/clock.h"

#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Streams are found through a hash of their number: a file of a few MB can
 * name tens of thousands of them, and each chunk names its own. */
static uint64_t stream_hash(const struct mt_recording *rec, uint32_t stream)
{
	return mt_hash64(stream ^ rec->salt);
}

static uint64_t proc_hash(const void *rec, size_t k)
{
	return stream_hash(rec, ((const struct mt_recording *)rec)->procs[k]->stream);
}

static struct mt_process *process_for(struct mt_recording *rec, uint32_t stream)
{
	if (rec->streams) {
		size_t i = stream_hash(rec, stream) & rec->streams_mask;
		for (; rec->streams[i]; i = (i + 1) & rec->streams_mask)
			if (rec->procs[rec->streams[i] - 1]->stream == stream)
				return rec->procs[rec->streams[i] - 1];
	}
	if (mt_slots_full(rec->nprocs, rec->streams_mask)) {
		if (!rec->streams)
			rec->salt = mt_hash_salt();
		mt_slots_grow(&rec->streams, &rec->streams_mask, 16, 0, rec->nprocs, proc_hash,
			      rec);
	}
	mt_grow(&rec->procs, &rec->procs_cap, rec->nprocs, sizeof *rec->procs);
	/* no table of its own yet: a stream may hold nothing but a record or two */
	struct mt_process *p = xcalloc(1, sizeof *p);
	p->stream = stream;
	mt_figures_init(&p->figures);
	p->salt = p->figures.salt;
	rec->streams[mt_slots_empty(rec->streams, rec->streams_mask, stream_hash(rec, stream))] =
		(uint32_t)rec->nprocs + 1;
	rec->procs[rec->nprocs++] = p;
	p->image = (uint32_t)rec->nprocs; /* until sort_by_start places it */
	return p;
}

static uint64_t hash_frames(const struct mt_process *p, const uint64_t *f, unsigned n)
{
	uint64_t h = n ^ p->salt;
	for (unsigned i = 0; i < n; i++)
		h = mt_hash_combine(h, f[i]);
	return h;
}

static uint64_t site_hash(const void *ctx, size_t s)
{
	const struct mt_process *p = ctx;
	return hash_frames(p, p->frames + p->site_off[s], p->site_len[s]);
}

static void content_grow(struct mt_process *p)
{
	mt_slots_grow(&p->by_content, &p->content_mask, 16, 0, p->figures.nsites, site_hash, p);
}

/* Site of the stack F[0..N): an existing one with the same frames, or a new one. */
static uint32_t content_lookup(struct mt_process *p, const uint64_t *f, unsigned n, int insert)
{
	if (!p->by_content)
		content_grow(p);
	size_t i = hash_frames(p, f, n) & p->content_mask;
	for (;; i = (i + 1) & p->content_mask) {
		uint32_t s = p->by_content[i];
		if (!s)
			break;
		s--;
		if (p->site_len[s] == n &&
		    memcmp(p->frames + p->site_off[s], f, n * sizeof *f) == 0)
			return s;
	}
	(void)insert;
	uint32_t s = (uint32_t)p->figures.nsites;
	mt_figures_reserve_site(&p->figures, s);
	size_t old_cap = p->site_cap;
	if (s >= p->site_cap) {
		/* by an eighth, as the sites' figures (doubling left 1 MB of
		 * these unused at 65,536 sites) */
		size_t n = p->site_cap < 16 ? 16 : p->site_cap + p->site_cap / 8;
		p->site_off = xrealloc(p->site_off, n * sizeof *p->site_off);
		memset(p->site_off + old_cap, 0, (n - old_cap) * sizeof *p->site_off);
		p->site_cap = n;
		/* site_len and site_object grow with site_off */
		p->site_len = xrealloc(p->site_len, p->site_cap * sizeof *p->site_len);
		p->site_object = xrealloc(p->site_object, p->site_cap * sizeof *p->site_object);
		memset(p->site_object + old_cap, 0,
		       (p->site_cap - old_cap) * sizeof *p->site_object);
	}
	if (p->nframes + n >= p->frames_cap) {
		/* by an eighth, as the sites' figures (figures.c) */
		size_t c = p->frames_cap < 1024 ? 1024 : p->frames_cap + p->frames_cap / 8;
		if (c < p->nframes + n)
			c = p->nframes + n;
		p->frames = xrealloc(p->frames, c * sizeof *p->frames);
		p->frames_cap = c;
	}
	memcpy(p->frames + p->nframes, f, n * sizeof *f);
	p->site_off[s] = (uint32_t)p->nframes;
	p->site_len[s] = n;
	p->nframes += n;
	p->by_content[i] = s + 1;
	if (mt_slots_full(p->figures.nsites, p->content_mask))
		content_grow(p);
	return s;
}

#define DENSE_SLACK 65536

static void ids_put(struct mt_process *p, uint64_t id, uint32_t site)
{
	if (id && id < p->id_dense_len) {
		p->ids_defined += !p->id_dense[id];
		p->id_dense[id] = site + 1;
		return;
	}
	if (id && id < 2 * (p->ids_defined + 1) + DENSE_SLACK) {
		size_t n = p->id_dense_len ? p->id_dense_len : 1024;
		while (n <= id)
			n *= 2;
		if (n > 2 * (p->ids_defined + 1) + DENSE_SLACK)
			n = id + 1;
		p->id_dense = xrealloc(p->id_dense, n * sizeof *p->id_dense);
		memset(p->id_dense + p->id_dense_len, 0,
		       (n - p->id_dense_len) * sizeof *p->id_dense);
		p->id_dense_len = n;
		p->ids_defined++;
		p->id_dense[id] = site + 1;
		return;
	}
	if (!id) { /* 0 marks an empty slot: stack id 0 has a field of its own */
		p->id0_site = site + 1;
		return;
	}
	if (!p->ids || (p->ids_used + 1) * 2 > p->ids_mask + 1) {
		size_t n = p->ids ? p->ids_mask + 1 : 0;
		__typeof__(p->ids) old = p->ids;
		p->ids_mask = n ? n * 2 - 1 : 15;
		p->ids = xcalloc(p->ids_mask + 1, sizeof *p->ids);
		p->ids_used = 0;
		for (size_t i = 0; i < n; i++)
			if (old[i].id)
				ids_put(p, old[i].id, old[i].site);
		free(old);
	}
	size_t i = mt_hash64(id ^ p->salt) & p->ids_mask;
	while (p->ids[i].id && p->ids[i].id != id)
		i = (i + 1) & p->ids_mask;
	if (!p->ids[i].id)
		p->ids_used++;
	p->ids[i].id = id;
	p->ids[i].site = site;
}

/* Site of stack id ID; an id never defined gets an empty stack of its own. */
static inline uint32_t site_of(struct mt_process *p, uint64_t id)
{
	if (id < p->id_dense_len && p->id_dense[id])
		return p->id_dense[id] - 1;
	if (!id && p->id0_site)
		return p->id0_site - 1;
	for (size_t i = mt_hash64(id ^ p->salt) & p->ids_mask; id && p->ids && p->ids[i].id;
	     i = (i + 1) & p->ids_mask)
		if (p->ids[i].id == id)
			return p->ids[i].site;
	uint64_t none = 0;
	/* an unknown stack: a site with a single zero frame ("[unknown]") */
	uint32_t s = content_lookup(p, &none, 1, 1);
	ids_put(p, id, s);
	return s;
}

/* argv is kept as one copy of the NUL-separated blob with pointers into it:
 * a blob of N NULs (N empty arguments) costs 9N bytes, not an allocation
 * each. */
static void set_identity(struct mt_process *p, const char *exe, size_t exelen, const char *argv,
			 size_t argvlen, const char *backend, size_t backendlen)
{
	free(p->exe);
	free(p->backend);
	p->exe = xstrndup(exe, exelen);
	p->backend = xstrndup(backend, backendlen);
	if (p->argc)
		free(p->argv[0]);
	free(p->argv);
	p->argc = 0;
	p->argv = NULL;
	size_t n = 0;
	for (size_t o = 0; o < argvlen; o += strnlen(argv + o, argvlen - o) + 1)
		n++;
	if (!n || n > INT_MAX)
		return;
	char *blob = xmalloc(argvlen + 1);
	memcpy(blob, argv, argvlen);
	blob[argvlen] = 0;
	p->argv = xmalloc(n * sizeof *p->argv);
	for (size_t o = 0; o < argvlen; o += strlen(blob + o) + 1)
		p->argv[p->argc++] = blob + o;
}

static void set_process(struct mt_process *p, const struct mt_event *ev)
{
	p->pid = ev->pid;
	p->ppid = ev->ppid;
	p->unix_ns = ev->unix_ns;
	p->start_ts = ev->ts;
	set_identity(p, ev->exe.s, ev->exe.len, ev->argv.s, ev->argv.len, ev->backend.s,
		     ev->backend.len);
}

void mt_process_add_module(struct mt_process *p, const char *path, uint64_t bias, uint64_t start,
			   uint64_t end, const uint8_t *build_id, size_t build_id_len)
{
	mt_grow(&p->modules, &p->modules_cap, p->nmodules, sizeof *p->modules);
	struct mt_module *m = &p->modules[p->nmodules++];
	m->path = xstrdup(path);
	m->bias = bias;
	m->start = start;
	m->end = end;
	m->build_id_len = build_id_len;
	m->build_id = (uint8_t *)xstrndup((const char *)build_id, build_id_len);
	m->shift = 0;
}

/* Moved objects go from 2^60 up, each on a 2^32 boundary: above any user
 * address of the architectures memtrace runs on, below MT_FRAME_TRUNCATED. */
#define REMAP_BASE (1ull << 60)
#define REMAP_ALIGN (1ull << 32)

static int same_object(const struct mt_module *m, const struct mt_event *ev)
{
	return m->start - m->shift == ev->start && m->end - m->shift == ev->end &&
	       m->bias - m->shift == ev->bias && m->build_id_len == ev->build_id.len &&
	       !memcmp(m->build_id, ev->build_id.s, ev->build_id.len) &&
	       strlen(m->path) == ev->path.len && !memcmp(m->path, ev->path.s, ev->path.len);
}

/* From now on, frames in [START, END) are moved by SHIFT (0: not at all). */
static void set_remap(struct mt_process *p, uint64_t start, uint64_t end, uint64_t shift)
{
	size_t k = 0;
	for (size_t i = 0; i < p->nremaps; i++)
		if (!(p->remaps[i].start < end && start < p->remaps[i].end))
			p->remaps[k++] = p->remaps[i];
	p->nremaps = k;
	if (!shift)
		return;
	mt_grow(&p->remaps, &p->remaps_cap, p->nremaps, sizeof *p->remaps);
	p->remaps[p->nremaps++] = (struct mt_remap){ start, end, shift };
}

/* A MODULE record: an object where none was (as it is), one announced
 * again (as it was), or one where another had been (moved, see struct
 * mt_module). */
static void add_module(struct mt_process *p, const struct mt_event *ev)
{
	uint64_t shift = 0;
	int overlap = 0;
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct mt_module *m = &p->modules[i];
		if (!(m->start - m->shift < ev->end && ev->start < m->end - m->shift))
			continue;
		if (same_object(m, ev)) {
			set_remap(p, ev->start, ev->end, m->shift);
			return;
		}
		overlap = 1;
	}
	if (overlap && ev->end > ev->start && ev->end - ev->start < REMAP_BASE / 4) {
		if (p->remap_next < REMAP_BASE)
			p->remap_next = REMAP_BASE;
		shift = p->remap_next - ev->start;
		p->remap_next += (ev->end - ev->start + REMAP_ALIGN - 1) & ~(REMAP_ALIGN - 1);
	}
	set_remap(p, ev->start, ev->end, shift);
	char *path = xstrndup(ev->path.s, ev->path.len);
	mt_process_add_module(p, path, ev->bias + shift, ev->start + shift, ev->end + shift,
			      (const uint8_t *)ev->build_id.s, ev->build_id.len);
	p->modules[p->nmodules - 1].shift = shift;
	free(path);
}

/* FRAMES of a stack recorded now, moved where an object took the place of
 * another (into OUT; FRAMES itself when nothing moves). */
static const uint64_t *remapped(const struct mt_process *p, const uint64_t *frames, unsigned n,
				uint64_t *out)
{
	if (!p->nremaps)
		return frames;
	for (unsigned i = 0; i < n; i++) {
		out[i] = frames[i];
		for (size_t r = 0; r < p->nremaps; r++)
			if (frames[i] - 1 >= p->remaps[r].start &&
			    frames[i] - 1 < p->remaps[r].end) {
				out[i] = frames[i] + p->remaps[r].shift;
				break;
			}
	}
	return out;
}

struct mt_process *mt_process_add(struct mt_recording *rec, uint32_t pid, uint32_t ppid,
				  const char *exe, const char *argv, size_t argv_len,
				  const char *backend)
{
	struct mt_process *p = process_for(rec, (uint32_t)rec->nprocs);
	p->pid = pid;
	p->ppid = ppid;
	set_identity(p, exe ? exe : "", exe ? strlen(exe) : 0, argv ? argv : "",
		     argv ? argv_len : 0, backend, strlen(backend));
	if (!exe) {
		/* unknown (the process is gone): the report says null, not "" */
		free(p->exe);
		p->exe = NULL;
	}
	return p;
}

static uint64_t hash_bytes(const struct mt_process *p, const char *s, size_t len)
{
	uint64_t h = len ^ p->salt;
	for (size_t i = 0; i < len; i++)
		h = mt_hash_combine(h, (uint8_t)s[i]);
	return h;
}

static uint64_t object_hash(const void *ctx, size_t k)
{
	const struct mt_process *p = ctx;
	return hash_bytes(p, p->objects[k], strlen(p->objects[k]));
}

/* Object paths are interned through a hash: real recordings name a few, a
 * crafted one can name one per record. */
static const char *object_intern(struct mt_process *p, const char *path, size_t len)
{
	uint64_t h = hash_bytes(p, path, len);
	size_t i = h & p->objects_mask;
	for (; p->objects_index && p->objects_index[i]; i = (i + 1) & p->objects_mask) {
		const char *o = p->objects[p->objects_index[i] - 1];
		if (strlen(o) == len && !memcmp(o, path, len))
			return o;
	}
	if (mt_slots_full(p->nobjects, p->objects_mask)) {
		mt_slots_grow(&p->objects_index, &p->objects_mask, 16, 0, p->nobjects, object_hash,
			      p);
		i = mt_slots_empty(p->objects_index, p->objects_mask, h);
	}
	mt_grow(&p->objects, &p->objects_cap, p->nobjects, sizeof *p->objects);
	p->objects[p->nobjects] = xstrndup(path, len);
	p->objects_index[i] = (uint32_t)++p->nobjects;
	return p->objects[p->nobjects - 1];
}

void mt_process_site_object(struct mt_process *p, uint32_t site, const char *path, size_t len)
{
	p->site_object[site] = object_intern(p, path, len);
}

uint32_t mt_process_site(struct mt_process *p, const uint64_t *frames, unsigned n)
{
	return content_lookup(p, frames, n, 1);
}

static void set_exec(struct mt_process *p, const struct mt_event *ev)
{
	free(p->exec_path);
	free(p->exec_why);
	p->exec_path = p->exec_why = NULL;
	p->exec_outcome = 0;
	if (ev->value == MT_EXEC_FAILED || ev->value > MT_EXEC_FAILED)
		return; /* the image went on */
	p->exec_outcome = (int)ev->value + 1;
	p->exec_ts = ev->ts;
	p->exec_path = xstrndup(ev->path.s, ev->path.len);
	p->exec_why = ev->text.len ? xstrndup(ev->text.s, ev->text.len) : NULL;
}

static __thread struct mt_budget *t_budget;

void mt_budget_set(struct mt_budget *b)
{
	t_budget = b;
}

struct mt_budget *mt_budget_get(void)
{
	return t_budget;
}

static uint64_t process_bytes(const struct mt_process *p)
{
	const struct mt_figures *c = &p->figures;
	uint64_t n = p->frames_cap * sizeof *p->frames;
	n += p->site_cap * (sizeof *p->site_off + sizeof *p->site_len + sizeof *p->site_object);
	n += (p->ids ? p->ids_mask + 1 : 0) * sizeof *p->ids;
	n += p->id_dense_len * sizeof *p->id_dense;
	n += (p->by_content ? p->content_mask + 1 : 0) * sizeof *p->by_content;
	n += c->sites_cap * sizeof *c->sites;
	n += (c->live ? c->live_mask + 1 : 0) * sizeof *c->live;
	n += (c->win.slots ? c->win.mask + 1 : 0) * sizeof(struct mt_wslot);
	n += (c->threads ? c->threads_mask + 1 : 0) * sizeof *c->threads;
	n += p->maps_cap * sizeof *p->maps + p->map_frames_cap * sizeof *p->map_frames;
	return n + sizeof *p;
}

uint64_t mt_recording_bytes(const struct mt_recording *rec)
{
	uint64_t n = rec->procs_cap * sizeof *rec->procs;
	for (size_t i = 0; i < rec->nprocs; i++)
		n += process_bytes(rec->procs[i]);
	return n;
}

/* Whether the thread's budget B stops the load now: cancelled, or out of
 * time.  Cheap enough for every few thousand events. */
static int budget_stops(struct mt_budget *b)
{
	/* once over (the hook of a load may say so: query/db.c's rows), it stays */
	if (b->exceeded != MT_BUDGET_OK)
		return 1;
	if ((b->cancel && *b->cancel) || (b->cancel2 && *b->cancel2)) {
		b->exceeded = MT_BUDGET_CANCELLED;
		return 1;
	}
	if (b->deadline_ns) {
		if (mt_now_ns() >= b->deadline_ns) {
			b->exceeded = MT_BUDGET_TIME;
			return 1;
		}
	}
	return 0;
}

int mt_budget_stopped(void)
{
	struct mt_budget *b = t_budget;
	if (!b)
		return 0;
	if (b->exceeded != MT_BUDGET_OK)
		return 1;
	/* the clock every 256 calls: a site's symbols cost more than that */
	static __thread unsigned calls;
	if ((b->cancel && *b->cancel) || (b->cancel2 && *b->cancel2) || (++calls & 255) == 0)
		return budget_stops(b);
	return 0;
}

/* Whether the thread's budget lets the load go on after a chunk of P; the
 * tables are counted per process, so a chunk costs one process's sum. */
static int within_budget(struct mt_recording *rec, struct mt_process *p, uint64_t *bytes)
{
	struct mt_budget *b = t_budget;
	if (!b)
		return 1;
	if (budget_stops(b))
		return 0;
	uint64_t pb = process_bytes(p);
	*bytes += pb - p->counted_bytes;
	p->counted_bytes = pb;
	if (b->max_bytes &&
	    b->spent + *bytes + rec->procs_cap * sizeof *rec->procs > b->max_bytes) {
		b->exceeded = MT_BUDGET_MEMORY;
		return 0;
	}
	return 1;
}

static void add_mapev(struct mt_process *p, uint64_t ts, uint32_t tid, const struct mt_mapcall *m,
		      const uint64_t *frames, unsigned n, char *path)
{
	mt_grow(&p->maps, &p->maps_cap, p->nmaps, sizeof *p->maps);
	mt_grow(&p->map_frames, &p->map_frames_cap, p->nmap_frames + n, sizeof *p->map_frames);
	if (n)
		memcpy(p->map_frames + p->nmap_frames, frames, n * sizeof *frames);
	p->maps[p->nmaps++] = (struct mt_mapev){ ts, *m, tid, (uint32_t)p->nmap_frames, n, path };
	p->nmap_frames += n;
}

static void add_mapcall(struct mt_process *p, const struct mt_event *ev)
{
	if (ev->map.kind == MT_MAP_BLOCK) {
		if (!p->block_maps) {
			p->block_maps = xcalloc(1, sizeof *p->block_maps);
			mt_ptrmap_xinit(p->block_maps, 64);
		}
		mt_ptrmap_xput(p->block_maps, ev->map.addr, p->nmaps);
	}
	add_mapev(p, ev->ts, ev->tid, &ev->map, ev->frames, ev->nframes,
		  ev->path.len ? xstrndup(ev->path.s, ev->path.len) : NULL);
}

/* The block KEY is freed (or moved) at TS: its own mapping, if it had one,
 * ends with it. */
static void block_gone(struct mt_process *p, uint64_t key, uint64_t ts)
{
	uint64_t at;
	if (!mt_ptrmap_take(p->block_maps, key, &at))
		return;
	struct mt_mapcall m = p->maps[at].m;
	m.kind = MT_MAP_BLOCK_END;
	add_mapev(p, ts, p->maps[at].tid, &m, NULL, 0, NULL);
}

/* A record of P's stream that is no allocation event. */
static void on_record(struct mt_process *p, const struct mt_load_hook *hook,
		      const struct mt_event *ev)
{
	switch (ev->type) {
	case MT_REC_STACK: {
		uint64_t moved[MT_MAX_FRAMES];
		ids_put(p, ev->stack,
			content_lookup(p, remapped(p, ev->frames, ev->nframes, moved), ev->nframes,
				       1));
		break;
	}
	case MT_REC_MODULE:
		add_module(p, ev);
		break;
	case MT_REC_PROCESS:
		set_process(p, ev);
		break;
	case MT_REC_MARKER:
		mt_grow(&p->markers, &p->markers_cap, p->nmarkers, sizeof *p->markers);
		p->markers[p->nmarkers++] =
			(struct mt_marker){ ev->ts, ev->value, xstrndup(ev->text.s, ev->text.len) };
		break;
	case MT_REC_LOST:
		if (ev->value < MT_LOST_KIND_COUNT)
			p->lost[ev->value] += ev->count;
		break;
	case MT_REC_CULLED:
		if (hook && hook->culled && !hook->culled(hook->ctx, p))
			break;
		mt_figures_culled(&p->figures, site_of(p, ev->stack), ev->count, ev->bytes,
				  ev->temporary);
		break;
	case MT_REC_EXIT:
		p->exited = 1;
		p->exit_status = ev->status;
		p->end_ts = ev->ts;
		break;
	case MT_REC_MODULES_RESET:
		break;
	case MT_REC_EXT:
		if (ev->ext == MT_EXT_ALLOCATOR) {
			mt_process_site_object(p, site_of(p, ev->stack), ev->path.s, ev->path.len);
		} else if (ev->ext == MT_EXT_MAIN) {
			p->main_role = 1;
		} else if (ev->ext == MT_EXT_SAMPLED) {
			/* only before the process's first event: blocks
			 * counted whole would be taken out weighed */
			if (!p->figures.seq)
				p->figures.sample_mean = ev->value;
		} else if (ev->ext == MT_EXT_CHILD) {
			p->untraced_children++;
		} else if (ev->ext == MT_EXT_EXEC) {
			set_exec(p, ev);
		} else if (ev->ext == MT_EXT_HEAP) {
			free(p->heap);
			free(p->heap_object);
			p->heap = xstrndup(ev->text.s, ev->text.len);
			p->heap_object = ev->path.len ? xstrndup(ev->path.s, ev->path.len) : NULL;
		} else if (ev->ext == MT_EXT_RSS) {
			mt_grow(&p->rss, &p->rss_cap, p->nrss, sizeof *p->rss);
			p->rss[p->nrss++] = (struct mt_rss_sample){ .ts = ev->ts, .m = ev->rss };
		} else if (ev->ext == MT_EXT_MALLOPT) {
			mt_grow(&p->tunes, &p->tunes_cap, p->ntunes, sizeof *p->tunes);
			struct mt_tune_call *t = &p->tunes[p->ntunes++];
			*t = (struct mt_tune_call){
				.ts = ev->ts, .tid = ev->tid, .nframes = ev->nframes, .m = ev->tune
			};
			t->frames = xmalloc((ev->nframes ? ev->nframes : 1) * sizeof *t->frames);
			uint64_t moved[MT_MAX_FRAMES];
			memcpy(t->frames, remapped(p, ev->frames, ev->nframes, moved),
			       ev->nframes * sizeof *t->frames);
		} else if (ev->ext == MT_EXT_PEAK) {
			mt_figures_true_peak(&p->figures, ev->ts, ev->bytes, ev->count);
		} else if (ev->ext == MT_EXT_MMAP) {
			add_mapcall(p, ev);
		} else if (ev->ext == MT_EXT_SCAN || ev->ext == MT_EXT_LEAKS) {
			mt_leak_kinds_event(&p->kinds, ev);
		}
		break;
	}
}

/* How far ahead of the event it feeds the reader asks for the memory the
 * events to come will touch: a block freed and a site's figures are
 * usually out of cache (500,000 live blocks, 65,536 sites), and a miss
 * costs more than the rest of an event.  Two steps: the block's slot and
 * the stack's entry first, then, once they are at hand, the site.  (Always
 * inlined: GCC takes a function that only prefetches for one without
 * effects, and drops its calls.) */
#define AHEAD_FAR 16
#define AHEAD_NEAR 8

__attribute__((always_inline)) static inline void prefetch_far(const struct mt_process *p,
							       const struct mt_bev *b)
{
	if (b->type == MT_REC_FREE)
		mt_figures_prefetch_block(&p->figures, b->ptr);
	if (b->type == MT_REC_REALLOC)
		mt_figures_prefetch_block(&p->figures, b->old_ptr);
	if ((b->type == MT_REC_ALLOC || b->type == MT_REC_REALLOC) && b->stack < p->id_dense_len)
		__builtin_prefetch(&p->id_dense[b->stack]);
}

__attribute__((always_inline)) static inline void prefetch_near(const struct mt_process *p,
								const struct mt_bev *b)
{
	if (b->type == MT_REC_FREE)
		mt_figures_prefetch_site(&p->figures, mt_figures_block_site(&p->figures, b->ptr));
	/* a realloc frees a block of one site and allocates from another:
	 * both sites (half the events of a realloc-heavy program, whose
	 * old site's miss was a fifth of the load) */
	if (b->type == MT_REC_REALLOC)
		mt_figures_prefetch_site(&p->figures,
					 mt_figures_block_site(&p->figures, b->old_ptr));
	if ((b->type == MT_REC_ALLOC || b->type == MT_REC_REALLOC) && b->stack < p->id_dense_len &&
	    p->id_dense[b->stack])
		mt_figures_prefetch_site(&p->figures, p->id_dense[b->stack] - 1);
}

/* Memory samples taken before TS get the heap in use as it is now.  A
 * sample is placed by time, not by its place in the stream: the recorder
 * takes it while the shim may still hold the events of the last
 * milliseconds. */
static void place_samples(struct mt_process *p, uint64_t ts)
{
	while (p->rss_placed < p->nrss && p->rss[p->rss_placed].ts < ts)
		p->rss[p->rss_placed++].heap = p->figures.t.live_bytes;
}

/* An allocation event, through the hook's gate when there is one (EV:
 * room for what the hook is shown). */
static inline void feed(struct mt_process *p, const struct mt_load_hook *hook,
			const struct mt_bev *b, struct mt_event *ev)
{
	if (__builtin_expect(p->rss_placed != p->nrss, 0))
		place_samples(p, b->ts);
	if (__builtin_expect(p->block_maps != NULL, 0) && b->type != MT_REC_ALLOC)
		block_gone(p, b->type == MT_REC_FREE ? b->ptr : b->old_ptr, b->ts);
	uint32_t site = b->type == MT_REC_FREE ? UINT32_MAX : site_of(p, b->stack);
	enum mt_gate g = MT_GATE_PASS;
	struct mt_figures *c = &p->figures;

	if (hook) {
		ev->type = b->type;
		ev->fn = b->fn;
		ev->tid = b->tid;
		ev->ts = b->ts;
		ev->ptr = b->ptr;
		ev->old_ptr = b->old_ptr;
		ev->size = b->size;
		ev->stack = b->stack;
		g = hook->event(hook->ctx, p, ev, site);
	}
	p->events++;
	if (g == MT_GATE_SKIP) {
		mt_figures_touch(c, b->tid, b->ts);
	} else if (b->type == MT_REC_ALLOC) {
		mt_figures_alloc(c, b->tid, b->ts, b->ptr, b->size, site, b->fn);
	} else if (b->type == MT_REC_FREE) {
		mt_figures_free(c, b->tid, b->ts, b->ptr);
	} else if (g == MT_GATE_PASS) {
		mt_figures_realloc(c, b->tid, b->ts, b->old_ptr, b->ptr, b->size, site, b->fn);
	} else if (g == MT_GATE_FREE_ONLY) {
		mt_figures_free(c, b->tid, b->ts, b->old_ptr);
	} else {
		mt_figures_touch(c, b->tid, b->ts);
		mt_figures_alloc(c, b->tid, b->ts, b->ptr, b->size, site, b->fn);
	}
}

static int by_start(const void *a, const void *b)
{
	const struct mt_process *p = *(struct mt_process *const *)a,
				*q = *(struct mt_process *const *)b;
	if (p->unix_ns != q->unix_ns)
		return p->unix_ns < q->unix_ns ? -1 : 1;
	return p->stream < q->stream ? -1 : p->stream > q->stream;
}

/* Streams come in the order their first chunk was written, which for short
 * processes is when they ended: processes are listed in the order they
 * started instead.  (Stream numbers break ties, so two loads of one file
 * list them alike.) */
static void sort_by_start(struct mt_recording *rec)
{
	if (rec->nprocs < 2)
		return;
	qsort(rec->procs, rec->nprocs, sizeof *rec->procs, by_start);
	memset(rec->streams, 0, (rec->streams_mask + 1) * sizeof *rec->streams);
	for (size_t k = 0; k < rec->nprocs; k++) {
		rec->streams[mt_slots_empty(rec->streams, rec->streams_mask, proc_hash(rec, k))] =
			(uint32_t)k + 1;
		rec->procs[k]->image = (uint32_t)k + 1;
	}
}

struct mt_process *mt_recording_main(const struct mt_recording *rec)
{
	struct mt_process *m = NULL;
	for (size_t i = 0; i < rec->nprocs; i++)
		if (rec->procs[i]->main_role)
			m = rec->procs[i]; /* in start order: the last is the latest */
	for (size_t i = 0; !m && i < rec->nprocs; i++) {
		int parent_in = 0;
		for (size_t k = 0; k < rec->nprocs && !parent_in; k++)
			parent_in = k != i && rec->procs[k]->pid == rec->procs[i]->ppid;
		if (!parent_in)
			m = rec->procs[i];
	}
	return m ? m : rec->nprocs ? rec->procs[0] : NULL;
}

const char *mt_process_name(const struct mt_process *p)
{
	const char *s = p->argc && p->argv[0][0] ? p->argv[0] : p->exe;
	if (!s || !*s)
		return "?";
	const char *slash = strrchr(s, '/');
	return slash && slash[1] ? slash + 1 : s;
}

const char *mt_signal_name(int sig)
{
	return mt_sig_name(sig); /* the recordings' numbering, not this machine's */
}

uint64_t mt_process_signal(const struct mt_process *p)
{
	return p->exited && p->exit_status < 0 ? (uint64_t)0 - (uint64_t)p->exit_status : 0;
}

const char *mt_process_signal_name(const struct mt_process *p)
{
	uint64_t sig = mt_process_signal(p);
	/* (not cast first: 2^32 + 9 is no SIGKILL) */
	return sig && sig <= 64 ? mt_signal_name((int)sig) : NULL;
}

const char *mt_heap_name_of(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strstr(base, "jemalloc"))
		return "jemalloc";
	if (strstr(base, "tcmalloc"))
		return "tcmalloc";
	if (strstr(base, "mimalloc"))
		return "mimalloc";
	if (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5))
		return "glibc";
	return "unknown";
}

void mt_process_guess_heap(struct mt_process *p)
{
	if (p->heap || !p->nobjects)
		return;
	uint64_t *n = xcalloc(p->nobjects, sizeof *n);
	for (size_t s = 0; s < p->figures.nsites && s < p->site_cap; s++)
		for (size_t o = 0; p->site_object[s] && o < p->nobjects; o++)
			if (p->site_object[s] == p->objects[o]) {
				n[o] += p->figures.sites[s].allocations;
				break;
			}
	size_t best = 0;
	for (size_t o = 1; o < p->nobjects; o++)
		if (n[o] > n[best])
			best = o;
	free(n);
	const char *name = mt_heap_name_of(p->objects[best]);
	/* the BPF backend probes a malloc the executable defines (a static
	 * program's C library is inside it): that allocator is not unknown,
	 * it is the program's own */
	if (!strcmp(name, "unknown") && p->exe && !strcmp(p->exe, p->objects[best]))
		name = "executable";
	p->heap = xstrdup(name);
	p->heap_object = xstrdup(p->objects[best]);
}

int mt_recording_load(struct mt_recording *rec, const char *path, char *err, size_t errlen)
{
	return mt_recording_load_hooked(rec, path, NULL, err, errlen);
}

/* Reads the chunks of R into REC's processes, saying how far it is on a
 * long read; a malformed record marks R truncated and corrupt.  Returns 1
 * when the budget stopped the reading (or it was cancelled), else 0. */
static int read_chunks(struct mt_recording *rec, struct mt_file_reader *r,
		       const struct mt_load_hook *hook)
{
	struct mt_progress pr;
	mt_progress_start(&pr, "reading", rec->path);
	int stopped = 0;
	unsigned events = 0;
	uint64_t bytes = 0;
	struct mt_event ev; /* on the stack: loads may run in several threads (the server) */
	struct mt_process *p = NULL;
	size_t n;
	const struct mt_bev *bev;
	struct mt_chunks *ch = mt_chunks_start(r);
	while (!stopped && (bev = mt_chunks_next(ch, &n))) {
		for (size_t i = 0; i < n && !stopped; i++) {
			const struct mt_bev *b = &bev[i];
			if (p && i + AHEAD_FAR < n)
				prefetch_far(p, &bev[i + AHEAD_FAR]);
			if (p && i + AHEAD_NEAR < n)
				prefetch_near(p, &bev[i + AHEAD_NEAR]);
			switch (b->type) {
			case MT_REC_ALLOC:
			case MT_REC_FREE:
			case MT_REC_REALLOC:
				if (__builtin_expect(!p, 0))
					break; /* (none in the binaries' stream) */
				feed(p, hook, b, &ev);
				/* a chunk can hold a million events, and a hook may
				 * write out each: the budget looks in between too */
				if (__builtin_expect((++events & 0x3fff) == 0, 0) && t_budget &&
				    budget_stops(t_budget))
					stopped = 1;
				break;
			case MT_BEV_OTHER:
				/* (the thread decoded it once: it is well formed) */
				if (p && mt_bev_record(b, &ev) > 0)
					on_record(p, hook, &ev);
				break;
			case MT_BEV_CHUNK:
				if (p && !within_budget(rec, p, &bytes)) {
					stopped = 1;
					break;
				}
				/* (every chunk: the recorder's hold a few MB each) */
				if (rec->file_size)
					mt_progress_at(&pr, b->ts, rec->file_size);
				if (t_budget && t_budget->progress)
					__atomic_store_n(t_budget->progress, b->ts,
							 __ATOMIC_RELAXED);
				if ((uint32_t)b->stack == MT_STREAM_OBJECTS) {
					const uint8_t *data = (const uint8_t *)(uintptr_t)b->ptr;
					/* binaries, not a process: noted, read when
					 * symbolized */
					if (!rec->embedded)
						rec->embedded = mt_objects_new(rec->path);
					mt_objects_note(rec->embedded, b->old_ptr, data, b->size);
					p = NULL;
					break;
				}
				p = process_for(rec, (uint32_t)b->stack);
				break;
			}
		}
	}
	if (!stopped && p && !within_budget(rec, p, &bytes))
		stopped = 1;
	uint64_t bad_chunk;
	size_t bad;
	if (mt_chunks_end(ch, &bad_chunk, &bad) < 0 && !stopped) {
		/* the chunk's checksum was right, so the writer wrote this */
		r->truncated = r->corrupt = 1;
		snprintf(r->why, sizeof r->why,
			 "a malformed record at byte %zu of the chunk at offset %llu", bad,
			 (unsigned long long)bad_chunk);
	}
	mt_progress_clear(&pr);
	return stopped;
}

/* What every process of REC is once all of it is read. */
static void finish_processes(struct mt_recording *rec)
{
	for (size_t i = 0; i < rec->nprocs; i++) {
		struct mt_process *p = rec->procs[i];
		p->embedded = rec->embedded;
		place_samples(p, UINT64_MAX);
		mt_figures_finish(&p->figures);
		mt_process_guess_heap(p);
		mt_process_runtime_held(p);
		mt_leak_kinds_finish(p);
		if (!p->end_ts || p->end_ts < p->figures.t.last_ts)
			p->end_ts = p->figures.t.last_ts > p->start_ts ? p->figures.t.last_ts :
									 p->start_ts;
		/* (a tuning call's time is exact, the events' are rounded) */
		if (p->ntunes && p->end_ts < p->tunes[p->ntunes - 1].ts)
			p->end_ts = p->tunes[p->ntunes - 1].ts;
	}
	if (t_budget)
		t_budget->spent += mt_recording_bytes(rec);
	sort_by_start(rec);
}

int mt_recording_load_hooked(struct mt_recording *rec, const char *path,
			     const struct mt_load_hook *hook, char *err, size_t errlen)
{
	memset(rec, 0, sizeof *rec);
	rec->path = path;
	rec->hook = hook;
	struct mt_file_reader r;
	if (mt_file_open(&r, path, err, errlen) < 0)
		return -1;
	rec->file_size = r.size;
	if (hook)
		r.limit = hook->upto;
	if (read_chunks(rec, &r, hook)) {
		snprintf(err, errlen, "%s: %s", path,
			 t_budget->exceeded == MT_BUDGET_MEMORY ?
				 "reading it takes more memory than the budget allows" :
			 t_budget->exceeded == MT_BUDGET_TIME ?
				 "reading it takes longer than the time budget allows" :
				 "reading it was cancelled");
		mt_file_close(&r);
		mt_recording_free(rec);
		return -1;
	}
	rec->truncated = r.truncated;
	rec->read_to = r.offset;
	snprintf(rec->why, sizeof rec->why, "%s", r.why);
	int corrupt = r.corrupt;
	mt_file_close(&r);
	if (corrupt) {
		snprintf(err, errlen, "%s is corrupted (%s)", path, rec->why);
		mt_recording_free(rec);
		return -1;
	}
	finish_processes(rec);
	if (rec->nprocs == 0 && rec->truncated) {
		snprintf(err, errlen, "%s is truncated and holds no complete data (%s)", path,
			 rec->why);
		mt_recording_free(rec);
		return -1;
	}
	return 0;
}

void mt_recording_shed(struct mt_recording *rec)
{
	for (size_t i = 0; i < rec->nprocs; i++) {
		struct mt_process *p = rec->procs[i];
		mt_figures_shed(&p->figures);
		free(p->ids);
		free(p->id_dense);
		free(p->by_content);
		p->ids = NULL;
		p->id_dense = NULL;
		p->by_content = NULL;
		p->ids_mask = p->ids_used = p->id_dense_len = p->content_mask = 0;
		if (p->nframes && p->nframes < p->frames_cap) {
			p->frames = xrealloc(p->frames, p->nframes * sizeof *p->frames);
			p->frames_cap = p->nframes;
		}
	}
#ifdef __GLIBC__
	/* Freed pages amid the heap (the chunks the load read, the blocks)
	 * count in the resident set until given back. */
	malloc_trim(0);
#endif
}

void mt_recording_free(struct mt_recording *rec)
{
	for (size_t i = 0; i < rec->nprocs; i++) {
		struct mt_process *p = rec->procs[i];
		for (size_t m = 0; m < p->nmodules; m++) {
			free(p->modules[m].path);
			free(p->modules[m].build_id);
		}
		for (size_t m = 0; m < p->nmarkers; m++)
			free(p->markers[m].text);
		if (p->argc)
			free(p->argv[0]);
		free(p->argv);
		free(p->modules);
		free(p->remaps);
		free(p->markers);
		for (size_t m = 0; m < p->ntunes; m++)
			free(p->tunes[m].frames);
		free(p->tunes);
		free(p->rss);
		for (size_t m = 0; m < p->nmaps; m++)
			free(p->maps[m].path);
		free(p->maps);
		free(p->map_frames);
		if (p->block_maps)
			mt_ptrmap_destroy(p->block_maps);
		free(p->block_maps);
		free(p->exe);
		free(p->backend);
		free(p->exec_path);
		free(p->exec_why);
		free(p->heap);
		free(p->heap_object);
		mt_leak_kinds_free(&p->kinds);
		free(p->frames);
		free(p->site_off);
		free(p->site_len);
		free(p->site_object);
		for (size_t o = 0; o < p->nobjects; o++)
			free(p->objects[o]);
		free(p->objects);
		free(p->objects_index);
		free(p->ids);
		free(p->id_dense);
		free(p->by_content);
		mt_figures_destroy(&p->figures);
		free(p);
	}
	free(rec->procs);
	free(rec->streams);
	mt_objects_free(rec->embedded);
	memset(rec, 0, sizeof *rec);
}

uint64_t mt_process_lost(const struct mt_process *p)
{
	uint64_t n = 0;
	for (int i = 0; i < MT_LOST_KIND_COUNT; i++)
		n += p->lost[i];
	return n;
}

double mt_process_duration(const struct mt_process *p)
{
	return p->end_ts > p->start_ts ? (double)(p->end_ts - p->start_ts) / 1e9 : 0.0;
}
