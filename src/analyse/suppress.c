/*
 * suppress.c - leak suppressions in LeakSanitizer's syntax (suppress.h).
 */
#include "suppress.h"
#include "sites.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct mt_suppressions {
	char **v;
	size_t n, cap;
};

void mt_supp_free(struct mt_suppressions *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s);
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
	return s;
}

struct mt_suppressions *mt_supp_load(const char *path, char *err, size_t errlen)
{
	/* a FIFO would block the open until a writer comes */
	struct stat st;
	if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode)) {
		snprintf(err, errlen, "cannot read the suppressions %s: it is a pipe", path);
		return NULL;
	}
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "cannot read the suppressions %s: %s", path, strerror(errno));
		return NULL;
	}
	struct mt_suppressions *s = xcalloc(1, sizeof *s);
	char *line = NULL;
	size_t cap = 0;
	unsigned no = 0;
	errno = 0;
	while (getline(&line, &cap, f) > 0) {
		no++;
		char *l = trim(line);
		if (!*l || *l == '#')
			continue;
		/* LSan's files hold only leak: lines; another sanitizer's kind
		 * in them is a mistake worth naming */
		if (strncmp(l, "leak:", 5) || !*trim(l + 5)) {
			snprintf(err, errlen, "%s:%u: not a 'leak:PATTERN' line", path, no);
			mt_supp_free(s);
			s = NULL;
			break;
		}
		mt_grow(&s->v, &s->cap, s->n, sizeof *s->v);
		s->v[s->n++] = xstrdup(trim(l + 5));
	}
	if (s && ferror(f)) {
		snprintf(err, errlen, "cannot read the suppressions %s: %s", path,
			 strerror(errno ? errno : EIO));
		mt_supp_free(s);
		s = NULL;
	}
	free(line);
	fclose(f);
	return s;
}

/* Whether the whole of T matches P[0..PN), '*' matching any text: the
 * classic greedy match that goes back only to the last star, so that a
 * pattern of many stars costs O(|P| |T|), not exponential time. */
static int glob(const char *p, size_t pn, const char *t)
{
	size_t pi = 0, star = (size_t)-1;
	const char *mark = t;
	while (*t) {
		if (pi < pn && p[pi] == '*') {
			star = pi++;
			mark = t;
		} else if (pi < pn && p[pi] == *t) {
			pi++;
			t++;
		} else if (star != (size_t)-1) {
			pi = star + 1;
			t = ++mark;
		} else {
			return 0;
		}
	}
	while (pi < pn && p[pi] == '*')
		pi++;
	return pi == pn;
}

int mt_supp_match(const char *pattern, const char *text)
{
	if (!text)
		return 0;
	/* LSan's pattern is found anywhere in the text unless anchored: the
	 * same as a whole match of "*PATTERN*" */
	size_t pn = strlen(pattern);
	int start = pn && pattern[0] == '^', end = pn > (size_t)start && pattern[pn - 1] == '$';
	pn -= (size_t)start + (size_t)end;
	char buf[512], *p = pn + 3 <= sizeof buf ? buf : xmalloc(pn + 3);
	size_t n = 0;
	if (!start)
		p[n++] = '*';
	memcpy(p + n, pattern + start, pn);
	n += pn;
	if (!end)
		p[n++] = '*';
	int r = glob(p, n, text);
	if (p != buf)
		free(p);
	return r;
}

static int frame_matches(const struct mt_suppressions *s, const struct mt_frame *f)
{
	for (size_t i = 0; i < s->n; i++)
		if (mt_supp_match(s->v[i], f->function) || mt_supp_match(s->v[i], f->file) ||
		    mt_supp_match(s->v[i], f->module))
			return 1;
	return 0;
}

size_t mt_supp_apply(const struct mt_suppressions *s, struct mt_recording *rec)
{
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	size_t n = 0;
	for (size_t i = 0; s && i < rec->nprocs; i++) {
		struct mt_process *p = rec->procs[i];
		struct mt_symbolizer *sym = NULL;
		for (uint32_t site = 0; site < p->figures.nsites; site++) {
			struct mt_site_stats *st = &p->figures.sites[site];
			if (!st->live_count)
				continue;
			if (!sym)
				sym = mt_process_symbolizer(p);
			int k = mt_site_frames(p, sym, site, fr, MT_SYM_MAX_FRAMES), hit = 0;
			for (int j = 0; j < k && !hit; j++)
				hit = frame_matches(s, &fr[j]);
			if (!hit)
				continue;
			p->figures.t.suppressed_count += st->live_count;
			p->figures.t.suppressed_bytes += st->live_bytes;
			p->figures.t.live_count -= st->live_count;
			p->figures.t.live_bytes -= st->live_bytes;
			st->live_count = st->live_bytes = 0;
			/* and out of the leak scan's kinds, which a later
			 * --leaks=KINDS or the leak gate counts from */
			struct mt_leak_kinds *lk = &p->kinds;
			if (lk->sites && site < lk->nsites) {
				for (int kd = 0; kd < MT_LEAK_KINDS; kd++) {
					lk->total.count[kd] -= lk->sites[site].count[kd];
					lk->total.bytes[kd] -= lk->sites[site].bytes[kd];
				}
				memset(&lk->sites[site], 0, sizeof lk->sites[site]);
			}
			n++;
		}
		mt_sym_free(sym);
	}
	return n;
}
