/*
 * otlp.c - see otlp.h.  The message, with opentelemetry-proto's field
 * numbers (collector/profiles/v1development/profiles_service.proto and
 * profiles/v1development/profiles.proto):
 *
 *   ExportProfilesServiceRequest: 1 resource_profiles, 2 dictionary
 *   ResourceProfiles: 1 resource (Resource: 1 attributes), 2 scope_profiles
 *   ScopeProfiles: 1 scope (InstrumentationScope: 1 name), 2 profiles
 *   Profile: 1 sample_type, 2 samples, 3 time_unix_nano (fixed64),
 *            4 duration_nano, 5 period_type, 6 period
 *   ValueType: 1 type_strindex, 2 unit_strindex
 *   Sample: 1 stack_index, 4 values
 *   ProfilesDictionary: 1 mapping_table, 2 location_table, 3 function_table,
 *            4 link_table, 5 string_table, 6 attribute_table, 7 stack_table,
 *            each beginning with its zero value, as the proto requires
 *   Mapping: 1 memory_start, 2 memory_limit, 3 file_offset,
 *            4 filename_strindex, 5 attribute_indices
 *   Location: 1 mapping_index, 2 address, 3 lines (Line: 1 function_index,
 *            2 line)
 *   Function: 1 name_strindex, 2 system_name_strindex, 3 filename_strindex
 *   Stack: 1 location_indices
 *   KeyValueAndUnit: 1 key_strindex, 2 value; KeyValue: 1 key, 2 value;
 *   AnyValue: 1 string_value, 3 int_value
 *
 * Mappings carry no build id field any more: it is the attribute
 * process.executable.build_id.gnu of OpenTelemetry's semantic conventions.
 * Strings a process gave (its name, its functions' and files' names) must
 * be UTF-8 in proto3, or a collector refuses the whole request: a byte
 * that starts no well-formed sequence becomes U+FFFD.
 */
#include "otlp.h"
#include "export.h"
#include "intern.h"
#include "protobuf.h"
#include "base/json.h"
#include "base/ptrmap.h"

#include <stdlib.h>
#include <string.h>

struct otlp {
	struct mt_pairs strs;  /* string -> string_table index */
	struct mt_pairs funcs; /* (name, file) -> function_table index - 1 */
	struct mt_ptrmap locs; /* address -> location_table index */
	uint64_t loc_zero;     /* that of address 0 */
	uint32_t nlocs, nattrs, nstacks;
	/* the dictionary's tables, each field of ProfilesDictionary */
	struct mt_pb strings, mappings, locations, functions, attributes, stacks;
	struct mt_pb msg, sub, clean;
};

/* S with every malformed byte as U+FFFD, in o->clean (NUL-terminated). */
static const char *utf8(struct otlp *o, const char *s)
{
	o->clean.len = 0;
	for (const unsigned char *c = (const unsigned char *)s; c && *c;) {
		int n = mt_utf8_len(c);
		mt_pb_reserve(&o->clean, 4);
		if (n)
			memcpy(o->clean.buf + o->clean.len, c, (size_t)n);
		else
			memcpy(o->clean.buf + o->clean.len, "\xef\xbf\xbd", 3);
		o->clean.len += n ? (size_t)n : 3;
		c += n ? n : 1;
	}
	mt_pb_reserve(&o->clean, 1);
	o->clean.buf[o->clean.len] = 0;
	return (const char *)o->clean.buf;
}

static uint64_t str(struct otlp *o, const char *s)
{
	int added;
	s = utf8(o, s);
	uint32_t i = mt_pairs_index(&o->strs, s, NULL, 0, &added);
	if (added)
		mt_pb_bytes(&o->strings, 5, s, strlen(s));
	return i;
}

static uint64_t function(struct otlp *o, const struct mt_frame *f)
{
	char buf[512];
	uint64_t name = str(o, mt_frame_name(f, buf, sizeof buf)), file = str(o, f->file);
	int added;
	char key[48];
	snprintf(key, sizeof key, "%llu/%llu", (unsigned long long)name, (unsigned long long)file);
	uint32_t i = mt_pairs_index(&o->funcs, key, NULL, 0, &added);
	if (added) {
		o->sub.len = 0;
		mt_pb_uint(&o->sub, 1, name);
		mt_pb_uint(&o->sub, 2, name);
		mt_pb_uint(&o->sub, 3, file);
		mt_pb_msg(&o->functions, 3, &o->sub);
	}
	return i + 1;
}

static int module_of(const struct mt_process *p, uint64_t address)
{
	for (size_t i = 0; i < p->nmodules; i++)
		if (address >= p->modules[i].start && address < p->modules[i].end)
			return (int)i;
	return -1;
}

/* The Location of the frames FR[0..N) of one address (inlined first). */
static uint64_t location(struct otlp *o, const struct mt_process *p, const struct mt_frame *fr,
			 int n)
{
	uint64_t a = fr[0].address, id;
	if (!a && o->loc_zero)
		return o->loc_zero;
	if (a && mt_ptrmap_get(&o->locs, a, &id))
		return id;
	id = ++o->nlocs;
	if (a)
		mt_ptrmap_xput(&o->locs, a, id);
	else
		o->loc_zero = id;
	uint64_t fids[MT_SYM_MAX_FRAMES];
	for (int i = 0; i < n; i++)
		fids[i] = fr[i].function || fr[i].module ? function(o, &fr[i]) : 0;
	int mod = a ? module_of(p, a) : -1;
	struct mt_pb line = { 0 };
	o->msg.len = 0;
	mt_pb_uint(&o->msg, 1, mod >= 0 ? (uint64_t)mod + 1 : 0);
	mt_pb_uint(&o->msg, 2, a);
	for (int i = 0; i < n; i++) {
		if (!fids[i])
			continue;
		line.len = 0;
		mt_pb_uint(&line, 1, fids[i]);
		mt_pb_uint(&line, 2, fr[i].line > 0 ? (uint64_t)fr[i].line : 0);
		mt_pb_msg(&o->msg, 3, &line);
	}
	mt_pb_free(&line);
	mt_pb_msg(&o->locations, 2, &o->msg);
	return id;
}

/* A Stack for the frames FR[0..N) of a site: its index. */
static uint64_t stack(struct otlp *o, const struct mt_process *p, const struct mt_frame *fr, int n)
{
	uint64_t ids[MT_SYM_MAX_FRAMES];
	size_t k = 0;
	for (int i = 0; i < n;) {
		int j = i;
		while (j + 1 < n && fr[j].inlined && fr[j + 1].address == fr[i].address)
			j++;
		ids[k++] = location(o, p, fr + i, j - i + 1);
		i = j + 1;
	}
	o->sub.len = 0;
	if (k)
		mt_pb_packed(&o->sub, 1, ids, k);
	mt_pb_msg(&o->stacks, 7, &o->sub);
	return ++o->nstacks;
}

static void mappings(struct otlp *o, const struct mt_process *p)
{
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct mt_module *mo = &p->modules[i];
		uint64_t attr = 0;
		if (mo->build_id_len) {
			char hex[2 * 64 + 1];
			size_t n = mo->build_id_len < 64 ? mo->build_id_len : 64;
			for (size_t k = 0; k < n; k++)
				snprintf(hex + 2 * k, 3, "%02x", mo->build_id[k]);
			struct mt_pb any = { 0 };
			mt_pb_bytes(&any, 1, hex, 2 * n);
			o->sub.len = 0;
			mt_pb_uint(&o->sub, 1, str(o, "process.executable.build_id.gnu"));
			mt_pb_msg(&o->sub, 2, &any);
			mt_pb_free(&any);
			mt_pb_msg(&o->attributes, 6, &o->sub);
			attr = ++o->nattrs;
		}
		uint64_t file = str(o, mo->path);
		o->msg.len = 0;
		mt_pb_uint(&o->msg, 1, mo->start);
		mt_pb_uint(&o->msg, 2, mo->end);
		mt_pb_uint(&o->msg, 4, file);
		if (attr)
			mt_pb_packed(&o->msg, 5, &attr, 1);
		mt_pb_msg(&o->mappings, 1, &o->msg);
	}
}

static void value_type(struct otlp *o, struct mt_pb *m, unsigned field, const char *type,
		       const char *unit)
{
	struct mt_pb vt = { 0 };
	mt_pb_uint(&vt, 1, str(o, type));
	mt_pb_uint(&vt, 2, str(o, unit));
	mt_pb_msg(m, field, &vt);
	mt_pb_free(&vt);
}

/* A resource attribute KEY: a string VALUE, or the integer IVAL. */
static void key_value(struct otlp *o, struct mt_pb *m, const char *key, const char *value,
		      uint64_t ival)
{
	struct mt_pb kv = { 0 }, any = { 0 };
	if (value) {
		value = utf8(o, value);
		mt_pb_bytes(&any, 1, value, strlen(value));
	} else {
		mt_pb_uint(&any, 3, ival);
	}
	mt_pb_bytes(&kv, 1, key, strlen(key));
	mt_pb_msg(&kv, 2, &any);
	mt_pb_msg(m, 1, &kv);
	mt_pb_free(&kv);
	mt_pb_free(&any);
}

uint8_t *mt_otlp_profiles(struct mt_process *p, const struct mt_pprof_head *h, const char *service,
			  size_t *len)
{
	static const char *const types[4][2] = { { "alloc_objects", "count" },
						 { "alloc_space", "bytes" },
						 { "inuse_objects", "count" },
						 { "inuse_space", "bytes" } };
	struct otlp *o = xcalloc(1, sizeof *o);
	if (mt_ptrmap_init(&o->locs, 4096) < 0)
		mt_oom(4096 * 16);
	/* the zero value first in every table */
	str(o, "");
	mt_pb_bytes(&o->mappings, 1, "", 0);
	mt_pb_bytes(&o->locations, 2, "", 0);
	mt_pb_bytes(&o->functions, 3, "", 0);
	mt_pb_bytes(&o->attributes, 6, "", 0);
	mt_pb_bytes(&o->stacks, 7, "", 0);

	/* the samples of the four profiles, a site's stack shared by them */
	struct mt_pb samples[4] = { { 0 } }, s = { 0 };
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	struct mt_symbolizer *sym = mt_process_symbolizer(p);
	for (uint32_t i = 0; i < p->figures.nsites; i++) {
		const struct mt_site_stats *st = &p->figures.sites[i];
		uint64_t v[4] = { st->allocations, st->allocated_bytes, st->live_count,
				  st->live_bytes };
		if (!v[0] && !v[2])
			continue;
		int n = mt_site_frames(p, sym, i, fr, MT_SYM_MAX_FRAMES);
		uint64_t sid = stack(o, p, fr, n);
		for (int k = 0; k < 4; k++) {
			if (!v[k])
				continue;
			s.len = 0;
			mt_pb_uint(&s, 1, sid);
			mt_pb_packed(&s, 4, &v[k], 1);
			mt_pb_msg(&samples[k], 2, &s);
		}
	}
	mt_sym_free(sym);
	mappings(o, p);

	struct mt_pb scope = { 0 }, res = { 0 }, rp = { 0 }, prof = { 0 }, tmp = { 0 };
	mt_pb_bytes(&tmp, 1, "memtrace", 8);
	mt_pb_msg(&scope, 1, &tmp); /* InstrumentationScope */
	for (int k = 0; k < 4; k++) {
		prof.len = 0;
		value_type(o, &prof, 1, types[k][0], types[k][1]);
		if (samples[k].len) { /* none: no buffer either */
			mt_pb_reserve(&prof, samples[k].len);
			memcpy(prof.buf + prof.len, samples[k].buf, samples[k].len);
			prof.len += samples[k].len;
		}
		mt_pb_fixed64(&prof, 3, h->time_ns);
		mt_pb_uint(&prof, 4, h->duration_ns);
		value_type(o, &prof, 5, "space", "bytes");
		mt_pb_uint(&prof, 6, h->period);
		mt_pb_msg(&scope, 2, &prof);
		mt_pb_free(&samples[k]);
	}
	key_value(o, &res, "service.name", service ? service : mt_process_name(p), 0);
	key_value(o, &res, "process.pid", NULL, p->pid);
	key_value(o, &res, "process.executable.name", mt_process_name(p), 0);
	mt_pb_msg(&rp, 1, &res);
	mt_pb_msg(&rp, 2, &scope);

	/* link_table[0]: the zero Link, with ids of their full lengths */
	static const uint8_t zero[16];
	tmp.len = 0;
	mt_pb_bytes(&tmp, 1, zero, 16);
	mt_pb_bytes(&tmp, 2, zero, 8);
	struct mt_pb dict = { 0 }, out = { 0 };
	const struct mt_pb *tables[] = { &o->mappings, &o->locations,  &o->functions,
					 &o->strings,  &o->attributes, &o->stacks };
	for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
		mt_pb_reserve(&dict, tables[i]->len);
		memcpy(dict.buf + dict.len, tables[i]->buf, tables[i]->len);
		dict.len += tables[i]->len;
		if (tables[i] == &o->functions)
			mt_pb_msg(&dict, 4, &tmp); /* after the functions, in field order */
	}
	mt_pb_msg(&out, 1, &rp);
	mt_pb_msg(&out, 2, &dict);
	*len = out.len;

	struct mt_pb *bufs[] = {
		&scope,	    &res,	 &rp,	       &prof,	      &tmp,	     &dict,
		&s,	    &o->strings, &o->mappings, &o->locations, &o->functions, &o->attributes,
		&o->stacks, &o->msg,	 &o->sub,      &o->clean
	};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		mt_pb_free(bufs[i]);
	mt_pairs_free(&o->strs);
	mt_pairs_free(&o->funcs);
	mt_ptrmap_destroy(&o->locs);
	free(o);
	return out.buf ? out.buf : xcalloc(1, 1);
}
