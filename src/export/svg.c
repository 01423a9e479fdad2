/*
 * svg.c - an interactive flamegraph in one SVG file, as flamegraph.pl
 * draws them: the call sites merged into a tree of frames from the outermost
 * function, drawn as a flame (the root at the bottom), each frame as wide as
 * its --weight.  Hovering a frame shows its function, location, figure and
 * share; a click zooms into it; Search highlights the frames a regular
 * expression matches and says what share of the total they hold.  The
 * script and style are src/export/web/svg-flamegraph.{js,css}, embedded.
 *
 * With --base, a differential flamegraph (as flamegraph.pl's difffolded
 * draws one): widths are the recording's, and each frame is red where it
 * grew since the base recording and blue where it shrank, the deeper the
 * larger the change; every process of each recording is merged, since
 * their pids differ between runs.
 *
 * Memory: the tree holds at most one node per frame of each site; the
 * symbolizers of the processes stay loaded until the file is written, since
 * the nodes point into their strings.
 */
#include "export.h"
#include "base/hash.h"
#include "base/slots.h"
#include "base/util.h"
#include "export/web/web.h"
#include "base/json.h"
#include "base/markup.h"

#include <stdlib.h>
#include <string.h>

#define WIDTH 1200
#define PAD 10
#define AREA (WIDTH - 2 * PAD)
#define ROW 16
#define TOP 60
#define BOTTOM 36
/* Frames narrower than this many pixels are left out, as flamegraph.pl
 * does: they could not be seen, and they would make the file huge. */
#define MIN_WIDTH 0.1
/* Mean advance of the 12 px label font, to cut labels that would overflow
 * in viewers that do not run the script (which refits them). */
#define CHAR_W 7.0

enum kind { K_ROOT, K_PROCESS, K_PROGRAM, K_LIBRARY, K_UNKNOWN };

struct node {
	const char *name, *file;
	uint32_t parent, kids, next; /* node indices, 0: none (node 0 is the root) */
	int line_lo, line_hi;
	unsigned depth : 16, kind : 4, several_files : 1;
	uint64_t value;
	uint64_t base; /* --base: the same frame's value in the base recording */
};

struct tree {
	struct node *n;
	size_t nn, cap;
	uint32_t *slots; /* (parent, name) -> node index + 1 */
	size_t mask;
	char **owned; /* names made here rather than by a symbolizer */
	size_t nowned, owned_cap;
	unsigned maxdepth;
};

/* ---- the tree ---- */

static uint64_t name_hash(uint32_t parent, const char *s)
{
	uint64_t h = mt_fnv_str(MT_FNV_SEED ^ parent, s);
	return h ^ (h >> 29);
}

static const char *own(struct tree *t, const char *s)
{
	mt_grow(&t->owned, &t->owned_cap, t->nowned, sizeof *t->owned);
	return t->owned[t->nowned++] = xstrdup(s);
}

static uint64_t node_hash(const void *ctx, size_t i)
{
	const struct tree *t = ctx;
	return name_hash(t->n[i].parent, t->n[i].name);
}

/* (the root, node 0, is no one's child: not in the index) */
static void rehash(struct tree *t)
{
	mt_slots_grow(&t->slots, &t->mask, 1024, 1, t->nn, node_hash, t);
}

static uint32_t new_node(struct tree *t, uint32_t parent, const char *name, enum kind kind)
{
	mt_grow(&t->n, &t->cap, t->nn, sizeof *t->n);
	uint32_t i = (uint32_t)t->nn++;
	struct node *n = &t->n[i];
	*n = (struct node){ .name = name, .parent = parent, .kind = kind };
	if (i) {
		n->depth = t->n[parent].depth + 1;
		n->next = t->n[parent].kids;
		t->n[parent].kids = i;
	}
	if (n->depth > t->maxdepth)
		t->maxdepth = n->depth;
	return i;
}

/* The child NAME of PARENT, made when missing.  A TRANSIENT name lives in a
 * caller's buffer and is copied when the node is made. */
static uint32_t child(struct tree *t, uint32_t parent, const char *name, int transient,
		      enum kind kind)
{
	if (mt_slots_full(t->nn, t->mask))
		rehash(t);
	size_t j = name_hash(parent, name) & t->mask;
	for (; t->slots[j]; j = (j + 1) & t->mask) {
		struct node *n = &t->n[t->slots[j] - 1];
		if (n->parent == parent && (n->name == name || !strcmp(n->name, name)))
			return t->slots[j] - 1;
	}
	uint32_t i = new_node(t, parent, transient ? own(t, name) : name, kind);
	t->slots[j] = i + 1;
	return i;
}

static enum kind frame_kind(const struct mt_frame *f, const char *exe)
{
	if (!f->function)
		return K_UNKNOWN;
	return f->module && exe && !strcmp(f->module, exe) ? K_PROGRAM : K_LIBRARY;
}

/* Where a node's frames are: one file and the range of their lines. */
static void merge_location(struct node *n, const struct mt_frame *f)
{
	if (!f->file)
		return;
	if (!n->file)
		n->file = f->file;
	else if (n->file != f->file && strcmp(n->file, f->file))
		n->several_files = 1;
	if (f->line > 0 && (!n->line_lo || f->line < n->line_lo))
		n->line_lo = f->line;
	if (f->line > n->line_hi)
		n->line_hi = f->line;
}

/* Adds W to the value (or, for the base recording, to the base) of every
 * node on the path of FR[0..N), made where missing. */
static void add_site(struct tree *t, uint32_t top, const struct mt_frame *fr, int n, uint64_t w,
		     const char *exe, int base)
{
	char buf[300];
	uint32_t cur = top;
	for (uint32_t a = top;; a = t->n[a].parent) {
		*(base ? &t->n[a].base : &t->n[a].value) += w;
		if (!a)
			break;
	}
	for (int k = n - 1; k >= 0; k--) {
		const char *name = mt_frame_name(&fr[k], buf, sizeof buf);
		cur = child(t, cur, name, name == buf, frame_kind(&fr[k], exe));
		merge_location(&t->n[cur], &fr[k]);
		*(base ? &t->n[cur].base : &t->n[cur].value) += w;
	}
}

static int by_name(const void *a, const void *b, void *ctx)
{
	const struct node *n = ctx;
	return strcmp(n[*(const uint32_t *)a].name, n[*(const uint32_t *)b].name);
}

/* Siblings left to right by name, as flamegraph.pl orders them: the x axis
 * is not time, and a fixed order lets two graphs be compared by eye. */
static void sort_children(struct tree *t)
{
	uint32_t *kids = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < t->nn; i++) {
		size_t k = 0;
		for (uint32_t c = t->n[i].kids; c; c = t->n[c].next) {
			mt_grow(&kids, &cap, k, sizeof *kids);
			kids[k++] = c;
		}
		if (k < 2)
			continue;
		qsort_r(kids, k, sizeof *kids, by_name, t->n);
		t->n[i].kids = kids[0];
		for (size_t j = 0; j < k; j++)
			t->n[kids[j]].next = j + 1 < k ? kids[j + 1] : 0;
	}
	free(kids);
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->owned);
	free(t->n);
	free(t->slots);
}

/* ---- writing ---- */

static long utf8_chars(const char *s)
{
	long n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; n++) {
		int len = mt_utf8_len(p);
		p += len ? len : 1;
	}
	return n;
}

static double hue_to_rgb(double p, double q, double t)
{
	if (t < 0)
		t += 1;
	if (t > 1)
		t -= 1;
	if (t < 1.0 / 6)
		return p + (q - p) * 6 * t;
	if (t < 0.5)
		return q;
	if (t < 2.0 / 3)
		return p + (q - p) * (2.0 / 3 - t) * 6;
	return p;
}

/* The fill of a frame: warm hues, picked by a hash of the function name so
 * that a function keeps its colour across graphs, reds and oranges for the
 * program's own code, ambers and yellows for libraries, grey when the
 * symbol is unknown.  The report page computes the same colours
 * (format.js, frameColor). */
static void frame_fill(FILE *f, const struct node *n)
{
	uint32_t h = 2166136261u;
	for (const char *s = n->name; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	double v1 = (h & 0xff) / 255.0, v2 = (h >> 8 & 0xff) / 255.0, v3 = (h >> 16 & 0xff) / 255.0;
	double hue, sat, light;
	switch (n->kind) {
	case K_PROGRAM:
		hue = 2 + 28 * v1, sat = 0.72 + 0.16 * v2, light = 0.58 + 0.08 * v3;
		break;
	case K_LIBRARY:
		hue = 38 + 16 * v1, sat = 0.62 + 0.16 * v2, light = 0.58 + 0.08 * v3;
		break;
	case K_UNKNOWN:
		hue = 0, sat = 0, light = 0.72 + 0.06 * v1;
		break;
	default:
		hue = 215, sat = 0.14, light = 0.74;
	}
	double q = light < 0.5 ? light * (1 + sat) : light + sat - light * sat, p = 2 * light - q;
	hue /= 360;
	fprintf(f, "rgb(%d,%d,%d)", (int)(255 * hue_to_rgb(p, q, hue + 1.0 / 3) + 0.5),
		(int)(255 * hue_to_rgb(p, q, hue) + 0.5),
		(int)(255 * hue_to_rgb(p, q, hue - 1.0 / 3) + 0.5));
}

struct emit {
	FILE *f;
	const struct tree *t;
	uint64_t total;
	const char *unit;
	const char *what; /* the root's location line: what the widths measure */
	int diff;	  /* --base: colour by change */
	uint64_t most;	  /* the largest change of a drawn frame */
};

static uint64_t change(const struct node *n)
{
	return n->value > n->base ? n->value - n->base : n->base - n->value;
}

/* A frame of a differential graph: white when unchanged, red as it grew,
 * blue as it shrank, the colour as deep as its change is large next to the
 * largest. */
static void diff_fill(FILE *f, const struct emit *e, const struct node *n)
{
	double k = e->most ? (double)change(n) / (double)e->most : 0;
	int fade = (int)(225 * (1 - k) + 0.5);
	if (n->value >= n->base)
		fprintf(f, "rgb(255,%d,%d)", 30 + fade, 30 + fade);
	else
		fprintf(f, "rgb(%d,%d,255)", 30 + fade, 30 + fade);
}

static double px(const struct emit *e, uint64_t v)
{
	return (double)v / (double)e->total * AREA;
}

static void location(FILE *f, const struct node *n)
{
	if (!n->file)
		return;
	mt_markup_str(f, n->file, -1);
	if (n->line_lo && n->line_lo == n->line_hi)
		fprintf(f, ":%d", n->line_lo);
	else if (n->line_lo)
		fprintf(f, ":%d\xe2\x80\x93%d", n->line_lo, n->line_hi);
	if (n->several_files)
		fputs(" and other files", f);
}

static unsigned drawn_depth(const struct emit *e, uint32_t i)
{
	const struct node *n = &e->t->n[i];
	unsigned d = n->depth;
	for (uint32_t c = n->kids; c; c = e->t->n[c].next)
		if (px(e, e->t->n[c].value) >= MIN_WIDTH) {
			unsigned cd = drawn_depth(e, c);
			d = cd > d ? cd : d;
		}
	return d;
}

static void emit_node(const struct emit *e, uint32_t i, uint64_t offset, unsigned maxd)
{
	const struct node *n = &e->t->n[i];
	double x = PAD + px(e, offset), w = px(e, n->value);
	if (w < MIN_WIDTH)
		return;
	int y = TOP + (int)(maxd - n->depth) * ROW;
	char num[32];
	fprintf(e->f, "<g class=\"f\" data-o=\"%llu\" data-v=\"%llu\" data-d=\"%u\"><title>",
		(unsigned long long)offset, (unsigned long long)n->value, n->depth);
	mt_markup_str(e->f, n->name, -1);
	fprintf(e->f, "\n%s %s (%.2f%%)\n", mt_fmt_count(n->value, num), e->unit,
		100.0 * (double)n->value / (double)e->total);
	if (e->diff)
		fprintf(e->f, "%s%s since the base\n", n->value >= n->base ? "+" : "-",
			mt_fmt_count(change(n), num));
	if (i == 0)
		fputs(e->what, e->f);
	else
		location(e->f, n);
	fprintf(e->f,
		"</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"",
		x, y, w, ROW - 1);
	if (e->diff)
		diff_fill(e->f, e, n);
	else
		frame_fill(e->f, n);
	fputs("\"/>", e->f);
	long fit = (long)((w - 6) / CHAR_W);
	fprintf(e->f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + ROW - 4.5);
	long len = utf8_chars(n->name);
	/* a cut name keeps at least three characters, or it says nothing */
	if (len <= fit) {
		mt_markup_str(e->f, n->name, -1);
	} else if (fit >= 5) {
		mt_markup_str(e->f, n->name, fit - 2);
		fputs("..", e->f);
	}
	fputs("</text></g>\n", e->f);
	for (uint32_t c = n->kids; c; c = e->t->n[c].next) {
		emit_node(e, c, offset, maxd);
		offset += e->t->n[c].value;
	}
}

static const char *const weight_titles[] = {
	"Bytes allocated",	  "Allocations",	   "Bytes leaked",
	"Bytes live at the peak", "Temporary allocations",
};

static void asset(FILE *f, const char *name)
{
	const struct mt_web_asset *a = mt_web_asset(name);
	if (a)
		fwrite(a->data, 1, a->len, f);
}

static void write_svg(struct mt_export_ctx *x, const struct tree *t, const struct mt_process *only)
{
	FILE *f = x->out;
	struct emit e = { f,
			  t,
			  t->n[0].value,
			  mt_weight_unit(x->weight),
			  weight_titles[x->weight],
			  x->base != NULL,
			  0 };
	for (size_t i = 1; e.diff && i < t->nn; i++)
		if (change(&t->n[i]) > e.most && px(&e, t->n[i].value) >= MIN_WIDTH)
			e.most = change(&t->n[i]);
	unsigned maxd = e.total ? drawn_depth(&e, 0) : 0;
	int height = TOP + (int)(maxd + 1) * ROW + BOTTOM;
	char num[32];
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" data-unit=\"%s\" data-total=\"%llu\" data-width=\"%d\" data-pad=\"%d\">\n"
		"<!-- a flamegraph of %s, written by memtrace export -->\n"
		"<style type=\"text/css\"><![CDATA[\n",
		WIDTH, height, WIDTH, height, e.unit, (unsigned long long)e.total, AREA, PAD,
		e.what);
	asset(f, "svg-flamegraph.css");
	fprintf(f, "]]></style>\n<rect class=\"bg\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\"/>\n",
		WIDTH, height);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\">%s%s: %s %s</text>\n", WIDTH / 2, e.what,
		e.diff ? ", red: grew since the base, blue: shrank" : "",
		mt_fmt_count(e.total, num), e.unit);
	fprintf(f, "<text id=\"subtitle\" x=\"%d\" y=\"44\">", WIDTH / 2);
	if (only) {
		mt_markup_str(f, only->exe ? only->exe : "?", -1);
		fprintf(f, " (pid %u) \xc2\xb7 ", only->pid);
	}
	fputs(e.total ? "click a frame to zoom, Ctrl-F to search" : "nothing to show", f);
	fputs("</text>\n", f);
	fprintf(f,
		"<text id=\"unzoom\" class=\"button hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n",
		PAD);
	fprintf(f, "<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\">Search</text>\n",
		WIDTH - PAD);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD, height - 14);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n", WIDTH - PAD, height - 14);
	fputs("<g id=\"frames\">\n", f);
	if (e.total)
		emit_node(&e, 0, 0, maxd);
	fputs("</g>\n<script type=\"text/ecmascript\"><![CDATA[\n", f);
	asset(f, "svg-flamegraph.js");
	fputs("]]></script>\n</svg>\n", f);
}

int mt_export_svg(struct mt_export_ctx *x, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct mt_recording *rec = &x->sel->matched, *brec = x->base ? &x->base->matched : NULL;
	struct tree t = { 0 };
	size_t nb = brec ? brec->nprocs : 0;
	struct mt_symbolizer **syms = xcalloc(rec->nprocs + nb + 1, sizeof *syms);
	struct mt_frame fr[MT_SYM_MAX_FRAMES];
	const struct mt_process *only = NULL;
	size_t nsel = 0;
	for (size_t i = 0; i < rec->nprocs; i++)
		if (mt_export_wants(x, rec->procs[i]))
			nsel++, only = rec->procs[i];
	new_node(&t, 0, "all", K_ROOT);
	rehash(&t);
	/* the base's processes after the recording's, into the nodes' base */
	for (size_t i = 0; i < rec->nprocs + nb; i++) {
		int base = i >= rec->nprocs;
		const struct mt_process *p = base ? brec->procs[i - rec->nprocs] : rec->procs[i];
		if (!base && !mt_export_wants(x, p))
			continue;
		/* several processes: a frame for each, above its stacks (not in
		 * a differential graph, whose runs have other pids) */
		uint32_t top = 0;
		if (nsel > 1 && !brec) {
			char name[300];
			/* named as in the report: by argv[0], a link's name */
			snprintf(name, sizeof name, "%s [%u]", mt_process_name(p), p->pid);
			top = child(&t, 0, name, 1, K_PROCESS);
			t.n[top].file = p->exe;
		}
		struct mt_symbolizer *sym = syms[i] = mt_process_symbolizer(p);
		for (uint32_t s = 0; s < p->figures.nsites; s++) {
			uint64_t w = mt_export_site_weight(x, p, s);
			if (!w)
				continue;
			int n = mt_site_frames(p, sym, s, fr, MT_SYM_MAX_FRAMES);
			add_site(&t, top, fr, n, w, p->exe, base);
		}
	}
	sort_children(&t);
	write_svg(x, &t, nsel == 1 && !brec ? only : NULL);
	tree_free(&t);
	for (size_t i = 0; i < rec->nprocs + nb; i++)
		if (syms[i])
			mt_sym_free(syms[i]);
	free(syms);
	return 0;
}
