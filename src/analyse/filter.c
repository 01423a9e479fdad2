/*
 * filter.c - see filter.h.  The keys and their meaning are bytehound's
 * (seed 002); "from"/"to" bound when an allocation was made, and the
 * in-range lifetimes ask whether it was freed between them.
 */
#include "filter.h"
#include "sites.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

enum kind { K_TIME, K_COUNT, K_COUNT_PCT, K_SECONDS };

static const struct key {
	const char *name;
	size_t off;
	enum kind kind;
} keys[] = {
	{ "from", offsetof(struct mt_filter, from), K_TIME },
	{ "to", offsetof(struct mt_filter, to), K_TIME },
	{ "address_min", offsetof(struct mt_filter, address_min), K_COUNT },
	{ "address_max", offsetof(struct mt_filter, address_max), K_COUNT },
	{ "size_min", offsetof(struct mt_filter, size_min), K_COUNT },
	{ "size_max", offsetof(struct mt_filter, size_max), K_COUNT },
	{ "lifetime_min", offsetof(struct mt_filter, lifetime_min), K_SECONDS },
	{ "lifetime_max", offsetof(struct mt_filter, lifetime_max), K_SECONDS },
	{ "backtrace_depth_min", offsetof(struct mt_filter, depth_min), K_COUNT },
	{ "backtrace_depth_max", offsetof(struct mt_filter, depth_max), K_COUNT },
	{ "group_interval_min", offsetof(struct mt_filter, group_interval_min), K_TIME },
	{ "group_interval_max", offsetof(struct mt_filter, group_interval_max), K_TIME },
	{ "group_allocations_min", offsetof(struct mt_filter, group_allocations_min), K_COUNT },
	{ "group_allocations_max", offsetof(struct mt_filter, group_allocations_max), K_COUNT },
	{ "group_leaked_allocations_min", offsetof(struct mt_filter, group_leaked_min),
	  K_COUNT_PCT },
	{ "group_leaked_allocations_max", offsetof(struct mt_filter, group_leaked_max),
	  K_COUNT_PCT },
	{ "thread", offsetof(struct mt_filter, thread), K_COUNT },
};

static const char *const re_keys[4] = { "function_regex", "source_regex", "negative_function_regex",
					"negative_source_regex" };

static const char *const lifetimes[] = { "all",
					 "only_leaked",
					 "only_temporary",
					 "only_not_deallocated_in_current_range",
					 "only_deallocated_in_current_range",
					 "only_whole_group_leaked" };

const char mt_filter_help[] =
	"filters (bytehound's; TIME is seconds, or a number with ms, s, min or h\n"
	"(200ms, 1.5s, 2min, 1h), or N% of the run):\n"
	"  --from TIME, --to TIME      allocations made in this range\n"
	"  --lifetime KIND             all, only_leaked, only_temporary,\n"
	"                              only_not_deallocated_in_current_range,\n"
	"                              only_deallocated_in_current_range,\n"
	"                              only_whole_group_leaked\n"
	"  --size-min N, --size-max N  requested size in bytes\n"
	"  --address-min N, --address-max N\n"
	"  --lifetime-min TIME, --lifetime-max TIME   from allocation to free (or end);\n"
	"                              no percentage\n"
	"  --backtrace-depth-min N, --backtrace-depth-max N\n"
	"  --function-regex RE, --negative-function-regex RE\n"
	"  --source-regex RE, --negative-source-regex RE\n"
	"                              a function (source file) of the stack matches RE;\n"
	"                              negative: none does (PCRE2 regexes)\n"
	"  --group-interval-min TIME, --group-interval-max TIME\n"
	"                              first to last allocation of the call site\n"
	"  --group-allocations-min N, --group-allocations-max N\n"
	"  --group-leaked-allocations-min N[%], --group-leaked-allocations-max N[%]\n"
	"  --thread TID                allocations made by thread TID (its kernel id;\n"
	"                              the main thread's is the pid)\n"
	"  --where SQL                 an SQL condition over the allocations table of\n"
	"                              memtrace query (and its sites and frames)\n";

void mt_filter_init(struct mt_filter *f)
{
	memset(f, 0, sizeof *f);
}

void mt_filter_free(struct mt_filter *f)
{
	for (int i = 0; i < 4; i++)
		if (f->re_set[i])
			pcre2_code_free(f->re[i]);
	free(f->where);
	free(f->where_bits);
	free(f->desc);
	memset(f, 0, sizeof *f);
}

/* "12", "0x1f", "1.5", "2s", "50%" by KIND into B. */
static int parse_bound(struct mt_fbound *b, enum kind kind, const char *v)
{
	size_t n = strlen(v);
	struct mt_fbound r = { 1, 0, 0 };
	if (n && v[n - 1] == '%' && (kind == K_TIME || kind == K_COUNT_PCT)) {
		char buf[64];
		if (n >= sizeof buf)
			return -1;
		memcpy(buf, v, n - 1);
		buf[n - 1] = 0;
		if (mt_parse_double(buf, &r.v) || r.v < 0 || r.v > 100)
			return -1;
		r.pct = 1;
	} else if (kind == K_TIME || kind == K_SECONDS) {
		if (mt_parse_seconds(v, &r.v))
			return -1;
	} else {
		char *end;
		if (!*v || *v == '-')
			return -1;
		unsigned long long x = strtoull(v, &end, 0);
		if (*end)
			return -1;
		r.v = (double)x;
	}
	*b = r;
	return 0;
}

/* Compiles VALUE, the regex of KEY, into *RE: 0, or -1 with a message.
 * The length cap bounds the compiled code too (PCRE2 refuses a pattern
 * whose compiled form outgrows its 64 KiB link size, such as a group
 * repeated {1,32000} times). */
static int compile_re(pcre2_code **re, const char *key, const char *value, char *err, size_t errlen)
{
	int code;
	PCRE2_SIZE off;
	if (!value) {
		snprintf(err, errlen, "%s: not a regular expression: no value", key);
		return -1;
	}
	if (strlen(value) > MT_FILTER_RE_MAX) {
		snprintf(err, errlen, "%s: the regular expression is longer than %d bytes", key,
			 MT_FILTER_RE_MAX);
		return -1;
	}
	pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
	if (!cc)
		mt_oom(4096);
	pcre2_set_max_pattern_length(cc, MT_FILTER_RE_MAX);
	pcre2_set_parens_nest_limit(cc, 64);
	*re = pcre2_compile((PCRE2_SPTR)value, PCRE2_ZERO_TERMINATED, PCRE2_NO_AUTO_CAPTURE, &code,
			    &off, cc);
	pcre2_compile_context_free(cc);
	if (!*re) {
		PCRE2_UCHAR why[160];
		pcre2_get_error_message(code, why, sizeof why);
		snprintf(err, errlen, "%s: not a regular expression: %s (at offset %zu)", key,
			 (const char *)why, (size_t)off);
		return -1;
	}
	return 0;
}

/* Records KEY=VALUE in f->desc, replacing an earlier value of KEY: what
 * reports print to say how they are filtered. */
static void describe(struct mt_filter *f, const char *key, const char *value)
{
	size_t kn = strlen(key), vn = strlen(value);
	char *old = f->desc, *d = xmalloc((old ? strlen(old) : 0) + kn + vn + 3);
	size_t o = 0;
	for (const char *s = old; s && *s;) {
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (!(n > kn && !strncmp(s, key, kn) && s[kn] == '=')) {
			memcpy(d + o, s, n);
			o += n;
			d[o++] = '\n';
		}
		s += n + (e != NULL);
	}
	memcpy(d + o, key, kn);
	o += kn;
	d[o++] = '=';
	memcpy(d + o, value, vn);
	o += vn;
	d[o] = 0;
	free(old);
	f->desc = d;
}

int mt_filter_set(struct mt_filter *f, const char *key, const char *value, char *err, size_t errlen)
{
	if (!strcmp(key, "where")) {
		if (!value || !value[strspn(value, " \t\r\n")]) {
			snprintf(err, errlen, "where: no SQL condition");
			return -1;
		}
		if (strlen(value) > MT_FILTER_WHERE_MAX) {
			snprintf(err, errlen, "where: the condition is longer than %d bytes",
				 MT_FILTER_WHERE_MAX);
			return -1;
		}
		free(f->where);
		free(f->where_bits);
		f->where_bits = NULL;
		f->where = xstrdup(value);
		f->active = 1;
		describe(f, key, value);
		return 0;
	}
	if (!strcmp(key, "lifetime")) {
		for (size_t i = 0; i < sizeof lifetimes / sizeof *lifetimes; i++)
			if (value && !strcmp(value, lifetimes[i])) {
				f->lifetime = (enum mt_lifetime)i;
				f->active |= i != 0;
				if (i)
					describe(f, key, value);
				return 0;
			}
		snprintf(
			err, errlen,
			"lifetime: '%s' is none of all, only_leaked, only_temporary, "
			"only_not_deallocated_in_current_range, only_deallocated_in_current_range, "
			"only_whole_group_leaked",
			value ? value : "");
		return -1;
	}
	for (int i = 0; i < 4; i++) {
		if (strcmp(key, re_keys[i]))
			continue;
		if (f->re_set[i])
			pcre2_code_free(f->re[i]);
		f->re_set[i] = 0;
		if (compile_re(&f->re[i], key, value, err, errlen) < 0)
			return -1;
		f->re_set[i] = 1;
		f->active = 1;
		describe(f, key, value);
		return 0;
	}
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		if (strcmp(key, keys[i].name))
			continue;
		struct mt_fbound *b = (struct mt_fbound *)((char *)f + keys[i].off);
		if (!value || parse_bound(b, keys[i].kind, value)) {
			const char *want =
				keys[i].kind == K_TIME ? "a duration: " MT_DURATION_FORMS
							 ", or a percentage of the run (10%)" :
				keys[i].kind == K_SECONDS   ? "a duration: " MT_DURATION_FORMS :
				keys[i].kind == K_COUNT_PCT ? "a number or a percentage" :
							      "a number";
			snprintf(err, errlen, "%s: '%s' is not %s", key, value ? value : "", want);
			return -1;
		}
		f->active = 1;
		describe(f, key, value);
		return 0;
	}
	return 1;
}

int mt_filter_arg(struct mt_filter *f, const char *cmd, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	if (strncmp(a, "--", 2))
		return 0;
	char key[64];
	size_t n = strcspn(a + 2, "=");
	if (n >= sizeof key)
		return 0;
	for (size_t k = 0; k < n; k++)
		key[k] = a[2 + k] == '-' ? '_' : a[2 + k];
	key[n] = 0;
	const char *val = a[2 + n] == '=' ? a + 3 + n : NULL;
	char err[300];
	/* is it a key at all? (a probe with a value every kind accepts) */
	struct mt_filter probe;
	mt_filter_init(&probe);
	int known = mt_filter_set(&probe, key, !strcmp(key, "lifetime") ? "all" : "1", err,
				  sizeof err) != 1;
	mt_filter_free(&probe);
	if (!known)
		return 0;
	if (!val) {
		if (*i + 1 >= argc) {
			mt_usage_error(cmd, "--%.*s needs a value", (int)n, a + 2);
			return -1;
		}
		val = argv[++*i];
	}
	if (mt_filter_set(f, key, val, err, sizeof err)) {
		mt_usage_error(cmd, "--%.*s: %s", (int)n, a + 2,
			       strchr(err, ':') ? strchr(err, ':') + 2 : err);
		return -1;
	}
	return 1;
}

static int in_bounds(const struct mt_fbound *lo, const struct mt_fbound *hi, double v)
{
	return (!lo->set || v >= lo->v) && (!hi->set || v <= hi->v);
}

static uint64_t at(const struct mt_fbound *b, uint64_t start, uint64_t end)
{
	double d = b->pct ? (double)(end - start) * b->v / 100.0 : b->v * 1e9;
	return start + (uint64_t)d;
}

/* What one preparation matches with: the limits, and room for a match. */
struct matcher {
	pcre2_match_context *mc;
	pcre2_match_data *md;
};

/* Is any of the N frames' function (WHICH 0) or file (1) matched by RE?
 * 1 or 0; -1 when a match ran into the limits: the pattern is too costly,
 * and the caller refuses it rather than guess. */
static int any_frame(const pcre2_code *re, const struct matcher *m, const struct mt_frame *fr,
		     int n, int which)
{
	for (int i = 0; i < n; i++) {
		const char *s = which ? fr[i].file : fr[i].function;
		if (!s)
			continue;
		int rc = pcre2_match(re, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0, m->md, m->mc);
		if (rc >= 0)
			return 1;
		if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
		    rc == PCRE2_ERROR_HEAPLIMIT)
			return -1;
	}
	return 0;
}

static int site_passes(const struct mt_filter *f, const struct mt_process *p,
		       struct mt_symbolizer *sym, const struct matcher *m, uint32_t site,
		       uint64_t run, const char **too_costly)
{
	const struct mt_site_stats *s = &p->figures.sites[site];
	if (f->group_allocations_min.set || f->group_allocations_max.set)
		if (!in_bounds(&f->group_allocations_min, &f->group_allocations_max,
			       (double)s->allocations))
			return 0;
	if (f->group_leaked_min.set || f->group_leaked_max.set) {
		double leaked = (double)s->live_count;
		double pct = s->allocations ? 100.0 * leaked / (double)s->allocations : 0;
		const struct mt_fbound *lo = &f->group_leaked_min, *hi = &f->group_leaked_max;
		if (lo->set && (lo->pct ? pct : leaked) < lo->v)
			return 0;
		if (hi->set && (hi->pct ? pct : leaked) > hi->v)
			return 0;
	}
	if (f->group_interval_min.set || f->group_interval_max.set) {
		const struct mt_site_span *tm = &p->figures.times[site];
		uint64_t iv = tm->last_ts - tm->first_ts;
		if (f->group_interval_min.set && iv < at(&f->group_interval_min, 0, run))
			return 0;
		if (f->group_interval_max.set && iv > at(&f->group_interval_max, 0, run))
			return 0;
	}
	if (f->lifetime == MT_LIFE_ONLY_WHOLE_GROUP_LEAKED &&
	    (!s->allocations || s->live_count != s->allocations))
		return 0;
	int need_frames = f->depth_min.set || f->depth_max.set;
	for (int i = 0; i < 4; i++)
		need_frames |= f->re_set[i];
	if (!need_frames)
		return 1;
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	int n = mt_site_frames(p, sym, site, fr, MT_SYM_MAX_FRAMES);
	if (!in_bounds(&f->depth_min, &f->depth_max, n))
		return 0;
	for (int i = 0; i < 4; i++) {
		if (!f->re_set[i])
			continue;
		int hit = any_frame(f->re[i], m, fr, n, i & 1);
		if (hit < 0) {
			*too_costly = re_keys[i];
			return 0;
		}
		if (i < 2 ? !hit : hit)
			return 0;
	}
	return 1;
}

void mt_filter_prepare(struct mt_filter_proc *fp, const struct mt_filter *f,
		       const struct mt_process *p, struct mt_symbolizer *sym)
{
	memset(fp, 0, sizeof *fp);
	fp->f = f;
	fp->end_ts = p->end_ts > p->start_ts ? p->end_ts : p->start_ts;
	uint64_t start = p->start_ts ? p->start_ts : p->figures.t.first_ts;
	if (p->figures.t.first_ts && p->figures.t.first_ts < start)
		start = p->figures.t.first_ts;
	fp->from_ts = f->from.set ? at(&f->from, start, fp->end_ts) : 0;
	fp->to_ts = f->to.set ? at(&f->to, start, fp->end_ts) : UINT64_MAX;
	fp->nsites = p->figures.nsites;
	fp->site_ok = xcalloc(fp->nsites ? fp->nsites : 1, 1);
	struct mt_symbolizer *own = NULL;
	if (!sym) {
		for (int i = 0; i < 4; i++)
			if (f->re_set[i] && !own)
				sym = own = mt_process_symbolizer(p);
		if (!sym && (f->depth_min.set || f->depth_max.set))
			sym = own = mt_process_symbolizer(p);
	}
	/* per preparation, so that threads each have their own */
	struct matcher m = { .mc = pcre2_match_context_create(NULL),
			     .md = pcre2_match_data_create(1, NULL) };
	if (!m.mc || !m.md)
		mt_oom(4096);
	pcre2_set_match_limit(m.mc, MT_FILTER_RE_STEPS);
	pcre2_set_depth_limit(m.mc, MT_FILTER_RE_STEPS);
	pcre2_set_heap_limit(m.mc, MT_FILTER_RE_HEAP / 1024);
	for (uint32_t s = 0; s < fp->nsites; s++)
		fp->site_ok[s] =
			(uint8_t)site_passes(f, p, sym, &m, s, fp->end_ts - start, &fp->too_costly);
	pcre2_match_data_free(m.md);
	pcre2_match_context_free(m.mc);
	if (own)
		mt_sym_free(own);
}

double mt_filter_span_s(const struct mt_filter *f, const struct mt_process *p, double *from_s)
{
	uint64_t end = p->end_ts > p->start_ts ? p->end_ts : p->start_ts;
	uint64_t start = p->start_ts ? p->start_ts : p->figures.t.first_ts;
	if (p->figures.t.first_ts && p->figures.t.first_ts < start)
		start = p->figures.t.first_ts;
	uint64_t lo = f && f->from.set ? at(&f->from, start, end) : start;
	uint64_t hi = f && f->to.set ? at(&f->to, start, end) : end;
	if (lo > end)
		lo = end;
	if (hi > end)
		hi = end;
	if (from_s)
		*from_s = (double)(lo - start) / 1e9;
	return hi > lo ? (double)(hi - lo) / 1e9 : 0;
}

void mt_filter_proc_free(struct mt_filter_proc *fp)
{
	free(fp->site_ok);
	memset(fp, 0, sizeof *fp);
}

int mt_filter_match(const struct mt_filter_proc *fp, const struct mt_life *l)
{
	const struct mt_filter *f = fp->f;
	if (l->site >= fp->nsites || !fp->site_ok[l->site])
		return 0;
	if (l->ts < fp->from_ts || l->ts > fp->to_ts)
		return 0;
	if (!in_bounds(&f->size_min, &f->size_max, (double)l->size))
		return 0;
	if (!in_bounds(&f->address_min, &f->address_max, (double)l->ptr))
		return 0;
	if (f->thread.set && (double)l->tid != f->thread.v)
		return 0;
	if (f->lifetime_min.set || f->lifetime_max.set) {
		uint64_t end = l->freed ? l->free_ts : fp->end_ts;
		double life = end > l->ts ? (double)(end - l->ts) / 1e9 : 0;
		if (!in_bounds(&f->lifetime_min, &f->lifetime_max, life))
			return 0;
	}
	switch (f->lifetime) {
	case MT_LIFE_ONLY_LEAKED:
		return !l->freed;
	case MT_LIFE_ONLY_TEMPORARY:
		return l->temporary;
	case MT_LIFE_ONLY_NOT_DEALLOCATED_IN_RANGE:
		return !l->freed || l->free_ts > fp->to_ts;
	case MT_LIFE_ONLY_DEALLOCATED_IN_RANGE:
		return l->freed && l->free_ts >= fp->from_ts && l->free_ts <= fp->to_ts;
	default:
		return 1;
	}
}
