/*
 * pprof.c - pprof's profile.proto (perftools.profiles.Profile),
 * gzipped, as `go tool pprof`, Pyroscope and Parca read it.
 *
 * The heap convention of pprof's own converters: four values per sample,
 * alloc_objects/count, alloc_space/bytes, inuse_objects/count and
 * inuse_space/bytes, where "in use" means still live when the recording
 * ended (leaked).  One Sample per call site; period 1, or for a sampled
 * recording its mean (the values are estimates already, as Go's are); a
 * Location per distinct address of a process, its Lines the inlined
 * functions first and the real function last; a Function per (name, file);
 * a Mapping per module, with its build-id; a frame without a symbol is a
 * function named "module+0xoffset".  Every selected process goes into the
 * one profile, the main one first, each sample labelled with its pid and
 * its process's name.  mt_pprof_write is the encoder for any list of
 * processes: `export -f pprof` and top's interval profiles (pprof.h).
 *
 * Repeated fields of a message may come in any order and interleaved, so the
 * profile is streamed into the gzip stream as it is built: a string, a
 * function or a location is written the first time a site needs it.  Memory
 * holds only the tables that map them to ids (bounded by the sites).
 */
#include "export.h"
#include "pprof.h"
#include "protobuf.h"
#include "base/hash.h"
#include "base/ptrmap.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Field numbers of profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING = 6,
	PROFILE_TIME = 9,
	PROFILE_DURATION = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_TYPE = 14,
};

enum { INFO_FUNC = 1, INFO_FILE = 2, INFO_LINE = 4 };

struct strent {
	char *s;
	uint64_t hash;
	uint32_t idx;
};

struct pprof {
	z_stream z;
	FILE *out;
	int zfailed;
	uint8_t zbuf[1 << 16];

	struct strent *strs; /* string -> string_table index */
	size_t strs_mask, nstrs;
	struct mt_ptrmap funcs; /* (name, file) string indices -> function id */
	struct mt_ptrmap locs;	/* address -> location id, per process */
	uint64_t nfuncs, nlocs, nmappings;
	uint64_t loc_zero; /* location id of address 0, per process */

	/* per module of the current process: what its locations carry (pprof
	 * symbolizes a mapping itself when none has any of it) */
	uint8_t *mod_info;

	/* the message being built, and one nested in it: whatever writes a
	 * field of its own (str_id, function_id) runs before one is begun */
	struct mt_pb msg, sub;
};

/* ---- the gzip stream ---- */

static int gz_open(struct pprof *pp, FILE *out)
{
	pp->out = out;
	/* windowBits 15 + 16: a gzip header and trailer, as pprof expects */
	return deflateInit2(&pp->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) ==
			       Z_OK ?
		       0 :
		       -1;
}

static void gz_run(struct pprof *pp, int flush)
{
	int r;
	do {
		pp->z.next_out = pp->zbuf;
		pp->z.avail_out = sizeof pp->zbuf;
		r = deflate(&pp->z, flush);
		if (r == Z_STREAM_ERROR)
			pp->zfailed = 1;
		fwrite(pp->zbuf, 1, sizeof pp->zbuf - pp->z.avail_out, pp->out);
	} while (pp->z.avail_out == 0 || (flush == Z_FINISH && r == Z_OK));
}

static void gz_write(struct pprof *pp, const void *data, size_t len)
{
	pp->z.next_in = (Bytef *)data;
	pp->z.avail_in = (uInt)len;
	gz_run(pp, Z_NO_FLUSH);
}

/* A field of the top-level Profile whose value is the message in M. */
static void emit(struct pprof *pp, unsigned field, struct mt_pb *m)
{
	uint8_t head[16];
	struct mt_pb h = { head, 0, sizeof head };
	mt_pb_tag(&h, field, MT_PB_LEN);
	mt_pb_varint(&h, m->len);
	gz_write(pp, h.buf, h.len);
	gz_write(pp, m->buf, m->len);
	m->len = 0;
}

static void emit_uint(struct pprof *pp, unsigned field, uint64_t v)
{
	uint8_t buf[24];
	struct mt_pb h = { buf, 0, sizeof buf };
	mt_pb_uint(&h, field, v);
	gz_write(pp, h.buf, h.len);
}

/* ---- string table ---- */

static void strs_grow(struct pprof *pp)
{
	size_t n = pp->strs_mask ? (pp->strs_mask + 1) * 2 : 1024;
	struct strent *e = xcalloc(n, sizeof *e);
	for (size_t i = 0; pp->strs && i <= pp->strs_mask; i++) {
		if (!pp->strs[i].s)
			continue;
		size_t j = pp->strs[i].hash & (n - 1);
		while (e[j].s)
			j = (j + 1) & (n - 1);
		e[j] = pp->strs[i];
	}
	free(pp->strs);
	pp->strs = e;
	pp->strs_mask = n - 1;
}

/* The string_table index of S ("" and NULL: 0), written out when new. */
static uint64_t str_id(struct pprof *pp, const char *s)
{
	if (!s || !*s)
		return 0;
	if ((pp->nstrs + 1) * 2 > pp->strs_mask + 1)
		strs_grow(pp);
	uint64_t h = mt_fnv_str(MT_FNV_SEED, s);
	size_t i = h & pp->strs_mask;
	for (; pp->strs[i].s; i = (i + 1) & pp->strs_mask)
		if (pp->strs[i].hash == h && !strcmp(pp->strs[i].s, s))
			return pp->strs[i].idx;
	pp->strs[i] = (struct strent){ xstrdup(s), h, (uint32_t)++pp->nstrs };
	mt_pb_bytes(&pp->msg, PROFILE_STRING, s, strlen(s));
	gz_write(pp, pp->msg.buf, pp->msg.len);
	pp->msg.len = 0;
	return pp->nstrs;
}

/* ---- functions, locations, mappings ---- */

/* The Function of frame F.  One without a symbol, in a module, is named
 * "module+0xoffset" as in memtrace's report: pprof would otherwise show
 * every such frame of a module as one "[libfoo.so]" node, adding up the
 * costs of unrelated code; the offset is also the same in every run, so
 * that -diff_base matches it. */
static uint64_t function_id(struct pprof *pp, const struct mt_frame *f)
{
	char buf[512];
	uint64_t name = str_id(pp, mt_frame_name(f, buf, sizeof buf)), file = str_id(pp, f->file);
	uint64_t key = (name << 32 | file) + 1, id;
	if (mt_ptrmap_get(&pp->funcs, key, &id))
		return id;
	id = ++pp->nfuncs;
	mt_ptrmap_xput(&pp->funcs, key, id);
	struct mt_pb *m = &pp->msg;
	mt_pb_uint(m, 1, id);
	mt_pb_uint(m, 2, name);
	mt_pb_uint(m, 3, name);
	mt_pb_uint(m, 4, file);
	emit(pp, PROFILE_FUNCTION, m);
	return id;
}

static int module_of(const struct mt_process *p, uint64_t address)
{
	for (size_t i = 0; i < p->nmodules; i++)
		if (address >= p->modules[i].start && address < p->modules[i].end)
			return (int)i;
	return -1;
}

/* The Location of the frames FR[0..N) of one address (inlined ones first). */
static uint64_t location_id(struct pprof *pp, const struct mt_process *p, uint64_t mapping_base,
			    const struct mt_frame *fr, int n)
{
	uint64_t a = fr[0].address, id;
	if (!a && pp->loc_zero)
		return pp->loc_zero;
	if (a && mt_ptrmap_get(&pp->locs, a, &id))
		return id;
	id = ++pp->nlocs;
	if (a)
		mt_ptrmap_xput(&pp->locs, a, id);
	else
		pp->loc_zero = id;

	int mod = a ? module_of(p, a) : -1;
	uint64_t fids[MT_SYM_MAX_FRAMES];
	for (int i = 0; i < n; i++)
		fids[i] = fr[i].function || fr[i].module ? function_id(pp, &fr[i]) : 0;
	struct mt_pb *m = &pp->msg, *line = &pp->sub;
	mt_pb_uint(m, 1, id);
	mt_pb_uint(m, 2, mod >= 0 ? mapping_base + (uint64_t)mod + 1 : 0);
	mt_pb_uint(m, 3, a);
	for (int i = 0; i < n; i++) {
		if (!fids[i])
			continue;
		line->len = 0;
		mt_pb_uint(line, 1, fids[i]);
		mt_pb_uint(line, 2, fr[i].line > 0 ? (uint64_t)fr[i].line : 0);
		mt_pb_msg(m, 4, line);
	}
	/* a name given to a frame without a symbol counts too: pprof keeps a
	 * location's lines rather than symbolize it again */
	for (int i = 0; mod >= 0 && i < n; i++)
		pp->mod_info[mod] |= (fids[i] ? INFO_FUNC : 0) | (fr[i].file ? INFO_FILE : 0) |
				     (fr[i].line ? INFO_LINE : 0);
	emit(pp, PROFILE_LOCATION, m);
	return id;
}

static void mappings(struct pprof *pp, const struct mt_process *p)
{
	struct mt_pb *m = &pp->msg;
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct mt_module *mo = &p->modules[i];
		char hex[2 * 64 + 1];
		size_t n = mo->build_id_len < 64 ? mo->build_id_len : 64;
		for (size_t k = 0; k < n; k++)
			snprintf(hex + 2 * k, 3, "%02x", mo->build_id[k]);
		hex[2 * n] = 0;
		uint64_t file = str_id(pp, mo->path), bid = str_id(pp, hex);
		mt_pb_uint(m, 1, pp->nmappings + i + 1);
		mt_pb_uint(m, 2, mo->start);
		mt_pb_uint(m, 3, mo->end);
		/* file_offset 0: the module's first mapping is that of its
		 * file's start, as the loader maps ELF objects */
		mt_pb_uint(m, 5, file);
		mt_pb_uint(m, 6, bid);
		mt_pb_uint(m, 7, !!(pp->mod_info[i] & INFO_FUNC));
		mt_pb_uint(m, 8, !!(pp->mod_info[i] & INFO_FILE));
		mt_pb_uint(m, 9, !!(pp->mod_info[i] & INFO_LINE));
		/* inlined functions are expanded wherever there is DWARF */
		mt_pb_uint(m, 10, !!(pp->mod_info[i] & INFO_FUNC));
		emit(pp, PROFILE_MAPPING, m);
	}
}

/* ---- samples ---- */

/* Location ids of a site's frames FR[0..N), leaf first: the frames of one
 * address (an inlined chain ends at the first frame not marked inlined)
 * make one Location. */
static size_t site_locations(struct pprof *pp, const struct mt_process *p, uint64_t mapping_base,
			     const struct mt_frame *fr, int n, uint64_t *ids)
{
	size_t k = 0;
	for (int i = 0; i < n;) {
		int j = i;
		while (j + 1 < n && fr[j].inlined && fr[j + 1].address == fr[i].address)
			j++;
		ids[k++] = location_id(pp, p, mapping_base, fr + i, j - i + 1);
		i = j + 1;
	}
	return k;
}

/* The label keys of every sample: its process's pid and name. */
struct labels {
	uint64_t pid_key, name_key, name;
};

static void sample(struct pprof *pp, const struct mt_process *p, const struct mt_site_stats *s,
		   const uint64_t *locs, size_t nlocs, const struct labels *lb)
{
	uint64_t v[4] = { s->allocations, s->allocated_bytes, s->live_count, s->live_bytes };
	struct mt_pb *m = &pp->msg, *label = &pp->sub;
	if (nlocs)
		mt_pb_packed(m, 1, locs, nlocs);
	mt_pb_packed(m, 2, v, 4);
	label->len = 0;
	mt_pb_uint(label, 1, lb->pid_key);
	mt_pb_uint(label, 3, p->pid);
	mt_pb_msg(m, 3, label);
	/* the name too: the programs an exec chain ran (env, a shell, the
	 * program) share one pid */
	if (lb->name) {
		label->len = 0;
		mt_pb_uint(label, 1, lb->name_key);
		mt_pb_uint(label, 2, lb->name);
		mt_pb_msg(m, 3, label);
	}
	emit(pp, PROFILE_SAMPLE, m);
}

static int process(struct pprof *pp, const struct mt_process *p, uint64_t pid_key)
{
	const char *name = mt_process_name(p);
	struct labels lb = { pid_key, str_id(pp, "process"),
			     strcmp(name, "?") ? str_id(pp, name) : 0 };
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	uint64_t locs[MT_SYM_MAX_FRAMES];
	mt_ptrmap_destroy(&pp->locs);
	if (mt_ptrmap_init(&pp->locs, 4096) < 0)
		return -1;
	pp->loc_zero = 0;
	free(pp->mod_info);
	pp->mod_info = xcalloc(p->nmodules + 1, 1);

	struct mt_symbolizer *sym = mt_process_symbolizer(p);
	for (uint32_t s = 0; s < p->figures.nsites; s++) {
		const struct mt_site_stats *st = &p->figures.sites[s];
		if (!st->allocations && !st->live_count)
			continue; /* not one allocation of it matched (or, in an
				   * interval's profile, none new and none live) */
		int n = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
		size_t k = site_locations(pp, p, pp->nmappings, fr, n, locs);
		sample(pp, p, st, locs, k, &lb);
	}
	mt_sym_free(sym);
	mappings(pp, p);
	pp->nmappings += p->nmodules;
	return 0;
}

/* ---- the profile ---- */

static void value_type(struct pprof *pp, unsigned field, const char *type, const char *unit)
{
	uint64_t t = str_id(pp, type), u = str_id(pp, unit);
	mt_pb_uint(&pp->msg, 1, t);
	mt_pb_uint(&pp->msg, 2, u);
	emit(pp, field, &pp->msg);
}

static void header(struct pprof *pp, const struct mt_pprof_head *h)
{
	/* string_table[0] must be "" */
	mt_pb_bytes(&pp->msg, PROFILE_STRING, "", 0);
	gz_write(pp, pp->msg.buf, pp->msg.len);
	pp->msg.len = 0;

	value_type(pp, PROFILE_SAMPLE_TYPE, "alloc_objects", "count");
	value_type(pp, PROFILE_SAMPLE_TYPE, "alloc_space", "bytes");
	value_type(pp, PROFILE_SAMPLE_TYPE, "inuse_objects", "count");
	value_type(pp, PROFILE_SAMPLE_TYPE, "inuse_space", "bytes");
	value_type(pp, PROFILE_PERIOD_TYPE, "space", "bytes");
	emit_uint(pp, PROFILE_PERIOD, h->period);
	emit_uint(pp, PROFILE_DEFAULT_TYPE, str_id(pp, "inuse_space"));
	if (h->comment)
		emit_uint(pp, PROFILE_COMMENT, str_id(pp, h->comment));
	emit_uint(pp, PROFILE_TIME, h->time_ns);
	emit_uint(pp, PROFILE_DURATION, h->duration_ns);
}

static void pprof_free(struct pprof *pp)
{
	for (size_t i = 0; pp->strs && i <= pp->strs_mask; i++)
		free(pp->strs[i].s);
	free(pp->strs);
	mt_ptrmap_destroy(&pp->funcs);
	mt_ptrmap_destroy(&pp->locs);
	free(pp->mod_info);
	mt_pb_free(&pp->msg);
	mt_pb_free(&pp->sub);
	deflateEnd(&pp->z);
	free(pp);
}

int mt_pprof_write(FILE *out, struct mt_process *const *procs, size_t n,
		   const struct mt_pprof_head *h, char *err, size_t errlen)
{
	struct pprof *pp = xcalloc(1, sizeof *pp);
	if (gz_open(pp, out) < 0) {
		free(pp);
		snprintf(err, errlen, "zlib initialisation failed");
		return -1;
	}
	int r = mt_ptrmap_init(&pp->funcs, 4096);
	header(pp, h);
	uint64_t pid_key = str_id(pp, "pid");
	for (size_t i = 0; r == 0 && i < n; i++)
		r = process(pp, procs[i], pid_key);
	pp->z.avail_in = 0;
	gz_run(pp, Z_FINISH);
	if (r < 0)
		snprintf(err, errlen, "out of memory");
	else if (pp->zfailed)
		snprintf(err, errlen, "compression failed");
	r = r < 0 || pp->zfailed ? -1 : 0;
	pprof_free(pp);
	return r;
}

int mt_export_pprof(struct mt_export_ctx *x, char *err, size_t errlen)
{
	const struct mt_recording *rec = &x->sel->matched;
	/* a sampled recording: the values are estimates already (as Go's
	 * heap profiles are), the period its mean */
	uint64_t mean = 0;
	for (size_t i = 0; i < rec->nprocs && !mean; i++)
		if (mt_export_wants(x, rec->procs[i]))
			mean = rec->procs[i]->figures.sample_mean;
	struct mt_pprof_head h = {
		.period = mean ? mean : 1,
		.comment =
			mean ? "allocations sampled by memtrace, one per period bytes on average, "
			       "every value an estimate; inuse = leaked: still live when the "
			       "recording ended, less the C/C++ runtime's blocks held until exit" :
			       "every allocation recorded by memtrace, unsampled; "
			       "inuse = leaked: still live when the recording ended, "
			       "less the C/C++ runtime's blocks held until exit",
	};
	struct mt_process **procs = xcalloc(rec->nprocs + 1, sizeof *procs);
	size_t n = 0;
	/* the main process first: pprof names the profile ("File:") after the
	 * first mapping, and a process's first module is its executable */
	struct mt_process *m = mt_recording_main(rec);
	if (m && mt_export_wants(x, m))
		procs[n++] = m;
	for (size_t i = 0; i < rec->nprocs; i++)
		if (rec->procs[i] != m && mt_export_wants(x, rec->procs[i]))
			procs[n++] = rec->procs[i];
	uint64_t start = UINT64_MAX, end = 0;
	for (size_t i = 0; i < n; i++) {
		if (procs[i]->start_ts < start) {
			start = procs[i]->start_ts;
			h.time_ns = procs[i]->unix_ns;
		}
		if (procs[i]->end_ts > end)
			end = procs[i]->end_ts;
	}
	h.duration_ns = end > start ? end - start : 0;
	int r = mt_pprof_write(x->out, procs, n, &h, err, errlen);
	free(procs);
	return r;
}
