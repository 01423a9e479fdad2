/*
 * tree.c - memtrail-style text trees of call sites.
 *
 * The root is the view's total; its children are the allocator functions,
 * then each level is one caller further out, so the tree reads from where
 * memory was asked for towards main.  Branches worth less than the threshold
 * (a percentage of the total) are folded into one line.
 *
 * The same tree shows a diff (`memtrace diff`): weights are then NEW minus
 * BASE, signed, branches are sorted by growth and folded by the size of
 * their change, whichever its sign.  A branch in which nothing changed (its
 * figures and those of every branch under it all 0: sites of two runs that
 * did not match by key but read the same, a growth here and as much
 * shrinkage there) is left out, its sites counted: a line of "0 B (0x)"
 * for each frame of them says nothing.
 *
 * Turned over (--top-down), the tree reads from main towards the allocator
 * functions; rooted at one function, it shows that function's callers
 * (bottom-up, towards main) or its callees (top-down, towards the
 * allocator), as heaptrack's caller/callee views do.
 */
#include "report.h"
#include "fit.h"
#include "analyse/diff.h"
#include "analyse/functions.h"
#include "analyse/sites.h"
#include "base/json.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

struct node {
	char *label;
	/* a diff's may be negative; all saturate (base/util.h: a hostile
	 * recording's sizes reach 2^64 - 1) */
	int64_t weight, bytes, count;
	uint64_t moved;		  /* a diff's: the sum of its sites' |weight| */
	size_t first_child, next; /* indices, 0 = none (node 0 is the root) */
	size_t parent, sites;	  /* a diff's: the sites through it */
	int changed;		  /* a diff's: a figure of it or below is not 0 */
};

/* A node's label at most (C++ names run to 12,000 columns: --full-names
 * shows them whole). */
#define LABEL_MAX (1 << 15)

struct tree {
	struct node *n;
	size_t len, cap;
	int diff;		  /* weights are changes: shown signed */
	const struct mt_fit *fit; /* how names are shown (NULL: folded) */
	/* a diff's: the branches in which nothing changed are shown too; else
	 * the sites of those left out are counted */
	int unchanged;
	size_t left_out;
};

static size_t child(struct tree *t, size_t parent, const char *label)
{
	size_t prev = 0;
	for (size_t c = t->n[parent].first_child; c; prev = c, c = t->n[c].next)
		if (!strcmp(t->n[c].label, label))
			return c;
	mt_grow(&t->n, &t->cap, t->len, sizeof *t->n);
	size_t c = t->len++;
	t->n[c] = (struct node){ .label = xstrdup(label), .parent = parent };
	if (prev)
		t->n[prev].next = c;
	else
		t->n[parent].first_child = c;
	return c;
}

static void label(char *buf, size_t len, const struct mt_frame *f, const struct mt_fit *fit)
{
	/* names and paths come from the traced program's files: escaped for
	 * the terminal as they are copied */
	size_t o;
	char name[2048];
	o = mt_text_safe(buf, len, mt_fit_label(f, fit, name, sizeof name));
	if (o + 3 >= len)
		return;
	if (f->file) {
		memcpy(buf + o, " [", 3);
		o += 2;
		o += mt_text_safe(buf + o, len - o, f->file);
		if (o < len)
			snprintf(buf + o, len - o, ":%d]%s", f->line,
				 f->inlined ? " (inlined)" : "");
	} else if (f->module && f->function) {
		memcpy(buf + o, " (", 3);
		o += 2;
		o += mt_text_safe(buf + o, len - o, f->module);
		if (o + 1 < len)
			memcpy(buf + o, ")", 2);
	}
}

static int by_weight(const void *a, const void *b, void *arg)
{
	const struct node *n = arg;
	int64_t wa = n[*(const size_t *)a].weight, wb = n[*(const size_t *)b].weight;
	return wa == wb ? 0 : wa > wb ? -1 : 1;
}

static uint64_t magnitude(int64_t w)
{
	return w < 0 ? (uint64_t)0 - (uint64_t)w : (uint64_t)w;
}

/* A figure of a diff: "+1.2 KB", "-3", "0". */
static const char *signed_fig(int64_t v, int bytes, char *buf)
{
	char a[32];
	snprintf(buf, 40, "%s%s",
		 v > 0 ? "+" :
		 v < 0 ? "-" :
			 "",
		 bytes ? mt_fmt_bytes(magnitude(v), a) : mt_fmt_count(magnitude(v), a));
	return buf;
}

static void describe(FILE *f, const struct tree *t, const struct node *n, uint64_t total,
		     enum mt_view v)
{
	char a[40], b[40];
	double pct = total ? 100.0 * (double)n->weight / (double)total : 0.0;
	if (t->diff) {
		if (v == MT_VIEW_TEMPORARY)
			fprintf(f, "%s: %s\n", signed_fig(n->count, 0, a), n->label);
		else if (v == MT_VIEW_FREQUENCY)
			fprintf(f, "%s calls (%s): %s\n", signed_fig(n->count, 0, a),
				signed_fig(n->bytes, 1, b), n->label);
		else
			fprintf(f, "%s (%sx): %s\n", signed_fig(n->bytes, 1, a),
				signed_fig(n->count, 0, b), n->label);
		return;
	}
	if (v == MT_VIEW_TEMPORARY)
		fprintf(f, "%.2f%% (%sx): %s\n", pct, mt_fmt_count(n->count, a), n->label);
	else if (v == MT_VIEW_FREQUENCY)
		fprintf(f, "%.2f%% (%s call%s, %s): %s\n", pct, mt_fmt_count(n->count, a),
			mt_s((uint64_t)n->count), mt_fmt_bytes(n->bytes, b), n->label);
	else
		fprintf(f, "%.2f%% (%s, %sx): %s\n", pct, mt_fmt_bytes(n->bytes, a),
			mt_fmt_count(n->count, b), n->label);
}

/* Deeper than this many columns, a line's tree prefix is shown as "[+N]"
 * (the levels left out) and the prefix's last columns: a 600-deep stack
 * stays on the screen, its last levels drawn as ever. */
#define MAX_INDENT 32
#define INDENT_MARK 8
/* A chain longer than twice this (nodes of one child each, of the same
 * weight: a recursion, a long line of wrappers) shows this many of its
 * first and last nodes, and one line for those between. */
#define CHAIN_KEEP 2

static void put_prefix(FILE *f, const char *prefix, size_t plen)
{
	if (plen <= MAX_INDENT) {
		fprintf(f, "%.*s", (int)plen, prefix);
		return;
	}
	size_t tail = MAX_INDENT - INDENT_MARK, hidden = plen - tail;
	char mark[32];
	snprintf(mark, sizeof mark, "  [+%zu]", (hidden + 1) / 2);
	fprintf(f, "%-*s%.*s", INDENT_MARK, mark, (int)tail, prefix + hidden);
}

/* The only child of node N when it continues a chain (nothing ends at N,
 * nothing branches there: the child weighs what N does); else 0. */
static size_t chain_next(const struct tree *t, size_t n)
{
	size_t c = t->n[n].first_child;
	if (!c || t->n[c].next || t->n[c].weight != t->n[n].weight ||
	    t->n[c].moved != t->n[n].moved || t->n[c].count != t->n[n].count)
		return 0;
	return c;
}

static void node_line(FILE *f, const struct tree *t, size_t node, const char *prefix, size_t plen,
		      uint64_t total, enum mt_view v)
{
	put_prefix(f, prefix, plen);
	fputs("-> ", f);
	describe(f, t, &t->n[node], total, v);
}

/* Shows the chain below NODE (its line written, its children's prefix
 * PREFIX[0..*PLEN)) shortened when long: its first and last CHAIN_KEEP
 * nodes, one line for the others.  Returns the node whose children come
 * next, *PLEN their prefix's length. */
static size_t fold_chain(FILE *f, const struct tree *t, size_t node, char *prefix, size_t *plen,
			 uint64_t total, enum mt_view v)
{
	size_t len = 0;
	for (size_t c = node; (c = chain_next(t, c));)
		len++;
	if (len <= 2 * CHAIN_KEEP + 1)
		return node;
	for (size_t j = 0; j < len; j++) {
		node = chain_next(t, node);
		if (j == CHAIN_KEEP) {
			put_prefix(f, prefix, *plen);
			fprintf(f,
				"-> ... %zu frames folded: each called by the next, all the same "
				"weight\n",
				len - 2 * CHAIN_KEEP);
		}
		if (j >= CHAIN_KEEP && j < len - CHAIN_KEEP)
			continue;
		node_line(f, t, node, prefix, *plen, total, v);
		if (*plen + 2 < 1024) {
			memcpy(prefix + *plen, "  ", 2);
			*plen += 2;
		}
	}
	return node;
}

static void print(FILE *f, struct tree *t, size_t node, char *prefix, size_t plen, uint64_t total,
		  enum mt_view v, double threshold)
{
	size_t nk = 0;
	for (size_t c = t->n[node].first_child; c; c = t->n[c].next)
		nk++;
	if (!nk)
		return;
	size_t *kids = xmalloc(nk * sizeof *kids);
	nk = 0;
	for (size_t c = t->n[node].first_child; c; c = t->n[c].next)
		kids[nk++] = c;
	qsort_r(kids, nk, sizeof *kids, by_weight, t->n);
	/* the branches below the threshold, whatever their place (a diff's
	 * shrinkages sort last), are folded into one line */
	size_t shown = 0, folded_n = 0;
	int64_t folded_w = 0;
	for (size_t i = 0; i < nk; i++) {
		const struct node *k = &t->n[kids[i]];
		if (t->diff && !k->changed) {
			/* nothing to fold: shown (--unchanged) or left out */
			if (t->unchanged)
				kids[shown++] = kids[i];
			else
				t->left_out += k->sites;
			continue;
		}
		/* a diff's branch by how much moved in it: one where a site grew
		 * as much as another shrank has changed (it was folded, the whole
		 * tree at times: "0: 1 more call site changed by less than
		 * 0.50%" for +7 and -7 calls) */
		uint64_t m = t->diff ? k->moved : magnitude(k->weight);
		if (total && 100.0 * (double)m / (double)total < threshold)
			folded_w = mt_sat_add(folded_w, k->weight), folded_n++;
		else
			kids[shown++] = kids[i];
	}
	for (size_t i = 0; i < shown; i++) {
		int last = i + 1 == shown && !folded_n;
		node_line(f, t, kids[i], prefix, plen, total, v);
		if (plen + 2 < 1024) {
			memcpy(prefix + plen, last ? "  " : "| ", 2);
			size_t kl = plen + 2;
			size_t from = fold_chain(f, t, kids[i], prefix, &kl, total, v);
			print(f, t, from, prefix, kl, total, v, threshold);
		}
		if (!last && t->n[kids[i]].first_child) {
			put_prefix(f, prefix, plen);
			fputs("| \n", f);
		}
	}
	if (folded_n && t->diff) {
		char a[40];
		put_prefix(f, prefix, plen);
		fprintf(f, "-> %s: %zu more call site%s changed by less than %.2f%% each\n",
			signed_fig(folded_w, v != MT_VIEW_TEMPORARY && v != MT_VIEW_FREQUENCY, a),
			folded_n, folded_n > 1 ? "s" : "", threshold);
	} else if (folded_n) {
		put_prefix(f, prefix, plen);
		fprintf(f, "-> %.2f%%: %zu more call site%s below the %.2f%% threshold\n",
			total ? 100.0 * (double)folded_w / (double)total : 0.0, folded_n,
			folded_n > 1 ? "s" : "", threshold);
	}
	free(kids);
}

static void node_add(struct node *n, int64_t w, int64_t bytes, int64_t count)
{
	n->weight = mt_sat_add(n->weight, w);
	n->moved = mt_sat_uadd(n->moved, magnitude(w));
	n->bytes = mt_sat_add(n->bytes, bytes);
	n->count = mt_sat_add(n->count, count);
	n->sites++;
}

/* Adds a site with frames FR[0..K) to T: its weight W, BYTES and COUNT on
 * every node of its path, from allocator function FN outwards to main. */
static void add_path(struct tree *t, int fn, const struct mt_frame *fr, int k, int64_t w,
		     int64_t bytes, int64_t count)
{
	char buf[LABEL_MAX];
	size_t cur = child(t, 0, mt_fn_names[fn]);
	size_t path[MT_SYM_MAX_FRAMES + 2];
	size_t depth = 0;
	path[depth++] = 0;
	path[depth++] = cur;
	for (int j = 0; j < k; j++) {
		label(buf, sizeof buf, &fr[j], t->fit);
		cur = child(t, cur, buf);
		path[depth++] = cur;
		/* like heaptrack, stop at main: what lies beyond is libc start-up */
		if (fr[j].function && !strcmp(fr[j].function, "main") && !fr[j].inlined)
			break;
	}
	for (size_t d = 0; d < depth; d++)
		node_add(&t->n[path[d]], w, bytes, count);
}

static void add_site(struct tree *t, const struct mt_process *p, struct mt_symbolizer *sym,
		     uint32_t site, enum mt_view view)
{
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	const struct mt_site_stats *s = &p->figures.sites[site];
	struct mt_amount a = mt_site_amount(s, view);
	int k = mt_site_frames(p, sym, site, fr, MT_SYM_MAX_FRAMES);
	add_path(t, s->fn, fr, k, mt_sat_i64(mt_amount_measure(a, view)), mt_sat_i64(a.bytes),
		 mt_sat_i64(a.count));
}

/* The tree's first line: the process's total in VIEW (of P: a sampled
 * recording's are estimates, ~). */
static void print_total(FILE *f, const struct mt_process *p, enum mt_view view)
{
	const struct mt_totals *tot = &p->figures.t;
	char a[32], b[32];
	if (p->figures.sample_mean)
		fputc('~', f);
	switch (view) {
	case MT_VIEW_LEAKS:
		fprintf(f, "leaked: %s in %s allocation%s\n", mt_fmt_bytes(tot->live_bytes, a),
			mt_fmt_count(tot->live_count, b), mt_s(tot->live_count));
		break;
	case MT_VIEW_PEAK:
		fprintf(f, "maximum: %s in %s block%s\n", mt_fmt_bytes(tot->peak_bytes, a),
			mt_fmt_count(tot->peak_count, b), mt_s(tot->peak_count));
		break;
	case MT_VIEW_TEMPORARY:
		fprintf(f, "temporary: %s of %s allocation%s\n", mt_fmt_count(tot->temporary, a),
			mt_fmt_count(tot->allocations, b), mt_s(tot->allocations));
		break;
	default:
		fprintf(f, "calls: %s allocation%s (%s)\n", mt_fmt_count(tot->allocations, a),
			mt_s(tot->allocations), mt_fmt_bytes(tot->allocated_bytes, b));
	}
}

static void tree_init(struct tree *t, int diff, const struct mt_fit *fit)
{
	*t = (struct tree){ .diff = diff, .fit = fit };
	mt_grow(&t->n, &t->cap, 0, sizeof *t->n);
	t->n[0] = (struct node){ .label = xstrdup("") };
	t->len = 1;
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->len; i++)
		free(t->n[i].label);
	free(t->n);
}

/* A frame's function as a node of the trees by function (top-down,
 * callers, callees): its name and file, whatever the line. */
static void fn_label(char *buf, size_t len, const struct mt_frame *f, const struct mt_fit *fit)
{
	char name[2048];
	size_t o = mt_text_safe(buf, len, mt_fit_label(f, fit, name, sizeof name));
	if (f->file && o + 4 < len) {
		const char *b = strrchr(f->file, '/');
		memcpy(buf + o, " [", 3);
		o += 2;
		o += mt_text_safe(buf + o, len - o, b ? b + 1 : f->file);
		if (o + 2 < len)
			memcpy(buf + o, "]", 2);
	}
}

/* Adds the path of the functions of frames FR[IDX[0]], FR[IDX[1]], ...
 * under a first node FIRST (none when NULL), then LAST (none when NULL). */
static void add_seq(struct tree *t, const char *first, const struct mt_frame *fr, const int *idx,
		    int m, const char *last, int64_t w, int64_t bytes, int64_t count)
{
	char buf[LABEL_MAX];
	size_t path[MT_SYM_MAX_FRAMES + 3], depth = 0, cur = 0;
	path[depth++] = 0;
	if (first)
		path[depth++] = cur = child(t, 0, first);
	for (int j = 0; j < m; j++) {
		fn_label(buf, sizeof buf, &fr[idx[j]], t->fit);
		path[depth++] = cur = child(t, cur, buf);
	}
	if (last)
		path[depth++] = child(t, cur, last);
	for (size_t d = 0; d < depth; d++)
		node_add(&t->n[path[d]], w, bytes, count);
}

static int is_main(const struct mt_frame *f)
{
	return f->function && !strcmp(f->function, "main") && !f->inlined;
}

void mt_print_topdown_tree(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			   const uint32_t *sites, size_t nsites, enum mt_view view,
			   double threshold, const struct mt_fit *fit)
{
	struct tree t;
	tree_init(&t, 0, fit);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	int idx[MT_SYM_MAX_FRAMES];
	for (size_t i = 0; i < nsites; i++) {
		const struct mt_site_stats *s = &p->figures.sites[sites[i]];
		struct mt_amount a = mt_site_amount(s, view);
		int k = mt_site_frames(p, sym, sites[i], fr, MT_SYM_MAX_FRAMES);
		/* from main (what lies beyond is libc start-up) to the leaf */
		int top = k - 1;
		for (int j = 0; j < k; j++)
			if (is_main(&fr[j]))
				top = j;
		int m = 0;
		for (int j = top; j >= 0; j--)
			idx[m++] = j;
		add_seq(&t, NULL, fr, idx, m, mt_fn_names[s->fn],
			mt_sat_i64(mt_amount_measure(a, view)), mt_sat_i64(a.bytes),
			mt_sat_i64(a.count));
	}
	print_total(f, p, view);
	char prefix[1100] = "  ";
	print(f, &t, 0, prefix, 2, mt_total_measure(&p->figures.t, view), view, threshold);
	tree_free(&t);
}

size_t mt_print_fn_tree(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
			const char *fn, int callers, enum mt_view view, double threshold,
			const struct mt_fit *fit)
{
	struct tree t;
	tree_init(&t, 0, fit);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	int idx[MT_SYM_MAX_FRAMES];
	char buf[512];
	size_t through = 0;
	uint64_t total = 0;
	for (uint32_t s = 0; s < p->figures.nsites; s++) {
		const struct mt_site_stats *st = &p->figures.sites[s];
		struct mt_amount a = mt_site_amount(st, view);
		uint64_t w = mt_amount_measure(a, view);
		if (!w)
			continue;
		int k = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
		int at = -1;
		for (int j = 0; j < k; j++)
			if (!strcmp(mt_frame_label(&fr[j], buf, sizeof buf), fn)) {
				at = j;
				if (callers)
					break; /* the innermost call: its callers above */
			}
		if (at < 0)
			continue;
		through++;
		total = mt_sat_uadd(total, w);
		int m = 0;
		if (callers) {
			for (int j = at + 1; j < k; j++) {
				idx[m++] = j;
				if (is_main(&fr[j]))
					break;
			}
		} else {
			for (int j = at - 1; j >= 0; j--)
				idx[m++] = j;
		}
		add_seq(&t, fn, fr, idx, m, callers ? NULL : mt_fn_names[st->fn], mt_sat_i64(w),
			mt_sat_i64(a.bytes), mt_sat_i64(a.count));
	}
	if (through) {
		char prefix[1100] = "  ";
		print(f, &t, 0, prefix, 2, total, view, threshold);
	}
	tree_free(&t);
	return through;
}

void mt_print_tree(FILE *f, const struct mt_process *p, struct mt_symbolizer *sym,
		   const uint32_t *sites, size_t nsites, enum mt_view view, double threshold,
		   const struct mt_fit *fit)
{
	struct tree t;
	tree_init(&t, 0, fit);
	for (size_t i = 0; i < nsites; i++)
		add_site(&t, p, sym, sites[i], view);
	print_total(f, p, view);
	char prefix[1100] = "  ";
	print(f, &t, 0, prefix, 2, mt_total_measure(&p->figures.t, view), view, threshold);
	tree_free(&t);
}

size_t mt_print_diff_tree(FILE *f, const struct mt_diff *d, const uint32_t *sites, size_t nsites,
			  enum mt_view view, double threshold, int unchanged)
{
	struct tree t;
	tree_init(&t, 1, NULL);
	t.unchanged = unchanged;
	/* percentages of the whole change, growth and shrinkage alike */
	uint64_t moved = 0;
	for (size_t i = 0; i < nsites; i++) {
		const struct mt_diff_site *s = &d->sites[sites[i]];
		struct mt_amount a = mt_site_amount(&s->new, view),
				 b = mt_site_amount(&s->base, view);
		int64_t w = mt_diff_measure(s, view);
		moved = mt_sat_uadd(moved, magnitude(w));
		add_path(&t, s->fn, s->frames, s->nframes, w, mt_sat_sub(a.bytes, b.bytes),
			 mt_sat_sub(a.count, b.count));
	}
	/* a node comes after its parent: from the last, each tells its parent */
	for (size_t i = t.len; i-- > 1;) {
		struct node *n = &t.n[i];
		n->changed |= n->weight || n->bytes || n->count;
		t.n[n->parent].changed |= n->changed;
	}
	char prefix[1100] = "  ";
	print(f, &t, 0, prefix, 2, moved, view, threshold);
	tree_free(&t);
	return t.left_out;
}
