/*
 * flamegraph.js - an interactive flamegraph on a canvas, drawn from the
 * sites of a process (Memtrace.sites): the stacks merged into a tree from
 * the outermost frame, as flamegraph.pl merges them, each node summing
 * every weight so that switching between allocated, leaked, peak bytes,
 * allocations and temporaries needs no new data.  Hover shows a frame's
 * figures, a click zooms into it, the search box highlights the frames a
 * regular expression matches.  The page draws it from embedded JSON, the
 * server's GUI from its REST API: it only ever sees the data object.
 *
 * Frames too narrow to draw are not dropped silently: side by side, they
 * become one grey block "N more" (a click zooms into their parent).  The
 * graph can be inverted (bottom-up: the allocating functions at the root,
 * their callers above, heaptrack's bottom-up view).
 *
 * A differential flamegraph (export --base): the sites carry base_* fields,
 * the base recording's figures; widths stay the recording's, and each frame
 * is red where it grew since the base, blue where it shrank, as deep as its
 * change next to the largest change drawn; a frame none of whose sites
 * changed is not drawn (its room stays blank), so that the changes stand
 * out of a graph of thousands of frames.
 */
(function (M) {
	'use strict';
	var ROW = 18;
	var FONT = '12px system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif';
	var MIN_PX = 0.4;  /* narrower frames are merged into an "N more" block */
	/* Sites a draw may look at to make frames' children (about 10-20 ms):
	 * beyond, the deeper rows come in the next draws, between events. */
	var BUDGET = 200000;
	var MATCH = '#c043e6';

	/* Nodes are plain objects with plain arrays: a recording of 100,000
	 * sites makes hundreds of thousands of them, and typed arrays or a Map
	 * per node cost seconds to create.  B (the base's figures) is shared
	 * and all zero until a differential graph writes it. */
	var NOBASE = [0, 0, 0, 0, 0];

	/*
	 * The call tree of a process's sites is made lazily: a node knows the
	 * sites that pass through it (their indices, in an Int32Array) and its
	 * figures, and its children are made the first time something asks for
	 * them (kidsOf) - the layout asks only for those of the frames wide
	 * enough to draw.  A recording of 100,000 sites 18 frames deep has
	 * about 2 million frames; the levels drawn are a few of them, so that
	 * turning the graph upside down (bottom-up) or zooming costs
	 * milliseconds instead of building the whole other tree.
	 */
	function Tree(sites, invert, diff, forest) {
		this.sites = sites;
		this.invert = invert;
		this.diff = diff;
		this.W = forest.W;
		this.B = forest.B;
		this.forest = forest;
		var all = new Int32Array(sites.length);
		for (var i = 0; i < all.length; i++)
			all[i] = i;
		this.root = newNode('all', null, 'root', diff);
		this.root.sites = all;
		this.root.v = forest.total.slice();
		if (diff)
			this.root.b = forest.totalB.slice();
	}

	/* The figures of SITES in flat arrays, five weights a site (and the
	 * base's, for a differential graph): read once, shared by both
	 * orientations. */
	function Forest(sites, diff) {
		var fields = M.weights.map(function (w) { return w.field; }), nw = fields.length;
		this.W = new Float64Array(sites.length * nw);
		this.B = diff ? new Float64Array(sites.length * nw) : null;
		this.total = [0, 0, 0, 0, 0];
		this.totalB = [0, 0, 0, 0, 0];
		/* frame names as numbers, and kidsOf's scratch arrays by number */
		this.ids = new Map();
		this.slot = new Int32Array(1024).fill(-1);
		this.acc = new Float64Array(1024 * 5);
		this.cnt = new Int32Array(1024);
		var W = this.W, t = this.total;
		for (var i = 0; i < sites.length; i++) {
			/* M.weights' order, read by name: fast where a keyed read is not */
			var s = sites[i], o = i * nw;
			W[o] = s.allocated_bytes || 0;
			W[o + 1] = s.allocations || 0;
			W[o + 2] = s.leaked_bytes || 0;
			W[o + 3] = s.peak_bytes || 0;
			W[o + 4] = s.temporary_allocations || 0;
			for (var k = 0; k < nw; k++) {
				t[k] += W[o + k];
				if (diff) {
					var b = s['base_' + fields[k]] || 0;
					this.B[o + k] = b;
					this.totalB[k] += b;
				}
			}
		}
	}

	/* Room for twice as many names in the scratch arrays. */
	Forest.prototype.grow = function () {
		var slot = new Int32Array(this.slot.length * 2).fill(-1), acc = new Float64Array(slot.length * 5);
		var cnt = new Int32Array(slot.length);
		slot.set(this.slot);
		acc.set(this.acc);
		cnt.set(this.cnt);
		this.slot = slot;
		this.acc = acc;
		this.cnt = cnt;
	};

	function newNode(name, parent, kind, diff) {
		return {
			name: name, parent: parent, kind: kind, depth: parent ? parent.depth + 1 : 0,
			kids: null, sites: null, v: [0, 0, 0, 0, 0], b: diff ? [0, 0, 0, 0, 0] : NOBASE,
			c: diff ? [0, 0, 0, 0, 0] : NOBASE, /* how much its sites changed, each counted */
			file: null, lo: 0, hi: 0, several: false, module: null, located: false,
		};
	}

	function byName(a, b) {
		return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
	}

	/* The frame of site S at DEPTH of TREE's orientation (depth 0: the
	 * outermost frame, or with invert the allocating one), or undefined. */
	function frameAt(tree, s, depth) {
		var fr = s.frames;
		if (depth >= fr.length)
			return undefined;
		return fr[tree.invert ? depth : fr.length - 1 - depth];
	}

	/* N's children in TREE, made from its sites the first time: one pass
	 * groups them by the name of their next frame (siblings sorted by name,
	 * as flamegraph.pl and the SVG export order them), a second hands each
	 * child its sites. */
	function kidsOf(tree, n) {
		if (n.kids)
			return n.kids;
		var S = n.sites, sites = tree.sites, W = tree.W, B = tree.B, d = n.depth, inv = tree.invert;
		/* a frame's name as a number (kept on the frame, for this forest);
		 * the child of each number in a scratch array, emptied after, and
		 * the children's figures summed in another */
		var forest = tree.forest, ids = forest.ids, slot = forest.slot, acc = forest.acc, cnt = forest.cnt;
		var kids = [], of = new Int32Array(S.length);
		for (var j = 0; j < S.length; j++) {
			var si = S[j], fr = sites[si].frames;
			if (d >= fr.length) {
				of[j] = -1;
				continue;
			}
			var f = fr[inv ? d : fr.length - 1 - d];
			var id = f._nidOf === forest ? f._nid : -1;
			if (id < 0) {
				id = ids.get(f.name);
				if (id === undefined) {
					ids.set(f.name, id = ids.size);
					if (id >= slot.length)
						forest.grow();
					slot = forest.slot;
					acc = forest.acc;
					cnt = forest.cnt;
				}
				f._nidOf = forest;
				f._nid = id;
			}
			var ci = slot[id];
			if (ci < 0) {
				ci = slot[id] = kids.length;
				kids.push(newNode(f.name, n, f.kind, !!B));
			}
			of[j] = ci;
			cnt[ci]++;
			var o = si * 5, a = ci * 5;
			acc[a] += W[o];
			acc[a + 1] += W[o + 1];
			acc[a + 2] += W[o + 2];
			acc[a + 3] += W[o + 3];
			acc[a + 4] += W[o + 4];
			if (B) {
				var b = kids[ci].b, ch = kids[ci].c;
				for (var k = 0; k < 5; k++) {
					b[k] += B[o + k];
					ch[k] += Math.abs(W[o + k] - B[o + k]);
				}
			}
		}
		var fill = new Int32Array(kids.length);
		for (var c = 0; c < kids.length; c++) {
			var kid = kids[c];
			kid.sites = new Int32Array(cnt[c]);
			for (var w = 0; w < 5; w++)
				kid.v[w] = acc[c * 5 + w];
			acc.fill(0, c * 5, c * 5 + 5);
			cnt[c] = 0;
			slot[ids.get(kid.name)] = -1;
		}
		for (var m = 0; m < S.length; m++) {
			var x = of[m];
			if (x >= 0)
				kids[x].sites[fill[x]++] = S[m];
		}
		kids.sort(byName);
		n.kids = kids;
		return kids;
	}

	function mergeLocation(n, f) {
		if (!n.module)
			n.module = f.module;
		if (!f.file)
			return;
		if (!n.file)
			n.file = f.file;
		else if (n.file !== f.file)
			n.several = true;
		if (f.line > 0 && (!n.lo || f.line < n.lo))
			n.lo = f.line;
		if (f.line > n.hi)
			n.hi = f.line;
	}

	/* Where node N's frames are (files, lines, module), gathered from its
	 * sites when first asked (a hover). */
	function locate(tree, n) {
		if (n.located || !n.sites || !n.parent)
			return n;
		n.located = true;
		for (var j = 0; j < n.sites.length; j++) {
			var f = frameAt(tree, tree.sites[n.sites[j]], n.depth - 1);
			if (f)
				mergeLocation(n, f);
		}
		return n;
	}

	/* The whole tree at once (the SVG tests and the page's own checks):
	 * every node expanded, kids in arrays. */
	function buildTree(sites, invert, diff) {
		var t = new Tree(sites, invert, diff, new Forest(sites, diff)), stack = [t.root];
		while (stack.length) {
			var n = stack.pop();
			locate(t, n);
			Array.prototype.push.apply(stack, kidsOf(t, n));
		}
		return t.root;
	}

	function add(n, v, b) {
		for (var i = 0; i < v.length; i++)
			n.v[i] += v[i];
		if (n.b !== NOBASE)
			for (var j = 0; j < b.length; j++)
				n.b[j] += b[j];
	}

	/* A frame of a differential graph: white unchanged, red grown, blue
	 * shrunk, the colour as deep as K (its change / the largest drawn),
	 * as the SVG export colours them. */
	function diffColor(grew, k) {
		var fade = Math.round(225 * (1 - k)) + 30;
		return grew ? 'rgb(255,' + fade + ',' + fade + ')' : 'rgb(' + fade + ',' + fade + ',255)';
	}

	/* "+N since the base" of node N in weight W (index WI) */
	function changeText(n, wi, w) {
		var d = n.v[wi] - n.b[wi];
		return (d >= 0 ? '+' : '\u2212') + M.fmt.value(Math.abs(d), w.unit) + ' since the base';
	}

	function location(n) {
		if (!n.file)
			return n.module || '';
		var s = n.file;
		if (n.lo)
			s += ':' + n.lo + (n.hi !== n.lo ? '\u2013' + n.hi : '');
		return n.several ? s + ' and other files' : s;
	}

	/*
	 * The widget, in CONTAINER.  OPTS.weight: the weight shown first (a
	 * name of Memtrace.weights).
	 */
	function Flamegraph(container, opts) {
		var self = this;
		opts = opts || {};
		this.wi = Math.max(0, M.weights.findIndex(function (w) { return w.name === opts.weight; }));
		this.root = null;
		this.zoomed = null;
		this.hover = null;
		this.re = null;
		this.flame = false;
		this.boxes = [];

		this.buttons = M.weights.map(function (w, i) {
			return M.el('button', {
				type: 'button', class: 'seg-btn', 'data-weight': w.name, text: w.label,
				onclick: function () {
					self.chosen = true; /* the user's: kept as the data changes */
					self.setWeight(i);
				},
			});
		});
		this.searchBox = M.el('input', {
			type: 'search', class: 'fg-search', placeholder: 'Search frames (regex)',
			'aria-label': 'search frames', oninput: function () { self.search(self.searchBox.value); },
		});
		this.resetBtn = M.el('button', {
			type: 'button', class: 'btn fg-reset', text: 'Reset zoom', disabled: true,
			onclick: function () { self.zoom(null); },
		});
		this.flipBtn = M.el('button', {
			type: 'button', class: 'btn fg-flip', text: 'Flame view', title: 'draw the root at the bottom',
			onclick: function () {
				self.flame = !self.flame;
				self.flipBtn.textContent = self.flame ? 'Icicle view' : 'Flame view';
				self.flipBtn.title = 'draw the root at the ' + (self.flame ? 'top' : 'bottom');
				self.draw();
			},
		});
		this.invertBtn = M.el('button', {
			type: 'button', class: 'btn fg-invert', text: 'Bottom-up', 'aria-pressed': 'false',
			title: 'root the graph at the allocating functions, their callers above',
			onclick: function () { self.invert(!self.inverted); },
		});
		this.total = M.el('span', { class: 'fg-total' });
		this.matched = M.el('span', { class: 'fg-matched' });
		this.canvas = M.el('canvas', { class: 'fg-canvas' });
		this.tip = M.el('div', { class: 'tip', hidden: true });
		this.details = M.el('div', { class: 'fg-details' });
		this.scroller = M.el('div', { class: 'fg-scroll' }, this.canvas);
		this.wrap = M.el('div', { class: 'fg-wrap' }, this.scroller, this.tip);
		container.appendChild(M.el('div', { class: 'fg' },
			M.el('div', { class: 'toolbar' },
				M.el('div', { class: 'seg', role: 'group', 'aria-label': 'weight' }, this.buttons),
				M.el('div', { class: 'toolbar-right' }, this.searchBox, this.resetBtn, this.invertBtn,
					this.flipBtn)),
			M.el('div', { class: 'fg-status' }, this.total, this.matched),
			this.wrap, this.details));

		this.canvas.addEventListener('mousemove', function (ev) { self.onMove(ev); });
		this.canvas.addEventListener('mouseleave', function () { self.setHover(null); });
		this.canvas.addEventListener('click', function (ev) {
			var b = self.boxAt(ev);
			/* an "N more" block: its parent, where they get more room */
			var n = b && (b.n.more ? b.n.parent : b.n);
			if (b)
				self.zoom(n === self.root ? null : n);
		});
		M.onWidthChange(this.wrap, function () { self.draw(); });
	}

	/* SITES drawn; with DIFF, coloured by their change since the base
	 * (their base_* fields).  Both orientations' trees are kept, each made
	 * as far as it has been drawn. */
	Flamegraph.prototype.setSites = function (sites, diff) {
		this.diff = !!diff;
		this.sites = sites;
		/* the last two sets of sites stay made, so that going back (a
		 * range dragged across the chart, then the whole run) is at once */
		var c = (this.made || []).filter(function (m) { return m.sites === sites && m.diff === !!diff; })[0];
		if (!c) {
			c = { sites: sites, diff: !!diff, forest: new Forest(sites, this.diff), trees: [null, null] };
			this.made = [c].concat((this.made || []).slice(0, 1));
		}
		this.forest = c.forest;
		this.trees = c.trees;
		this.show();
	};

	/* The tree of the orientation chosen, drawn from its root. */
	Flamegraph.prototype.show = function () {
		var o = this.inverted ? 1 : 0;
		if (!this.trees[o])
			this.trees[o] = new Tree(this.sites, !!this.inverted, this.diff, this.forest);
		this.tree = this.trees[o];
		this.root = this.tree.root;
		this.zoomed = null;
		this.hover = null;
		this.search(this.searchBox.value, true);
		this.setWeight(this.wi);
	};

	/* Top-down (callers at the root, the default) or bottom-up. */
	Flamegraph.prototype.invert = function (on) {
		this.inverted = on;
		this.invertBtn.setAttribute('aria-pressed', on ? 'true' : 'false');
		this.invertBtn.classList.toggle('active', on);
		if (this.sites)
			this.show();
	};

	Flamegraph.prototype.setWeight = function (i) {
		if (typeof i === 'string')
			i = M.weights.findIndex(function (w) { return w.name === i; });
		this.wi = i;
		this.buttons.forEach(function (b, k) {
			b.classList.toggle('active', k === i);
			b.setAttribute('aria-pressed', k === i ? 'true' : 'false');
		});
		/* a zoomed frame with nothing of this weight cannot stay zoomed */
		if (this.zoomed && !this.zoomed.v[i])
			this.zoomed = null;
		this.update();
	};

	Flamegraph.prototype.zoom = function (n) {
		this.zoomed = n;
		this.update();
	};

	/* Highlights the frames whose name matches TEXT (a regular expression,
	 * case-insensitive); '' clears.  QUIET: not drawn yet (the caller
	 * draws). */
	Flamegraph.prototype.search = function (text, quiet) {
		this.re = null;
		this.searchBox.classList.remove('bad');
		if (text) {
			try {
				this.re = new RegExp(text, 'i');
			} catch (e) {
				this.searchBox.classList.add('bad');
			}
		}
		this.share = null;
		if (!quiet)
			this.update();
	};

	Flamegraph.prototype.update = function () {
		if (!this.root)
			return;
		var w = M.weights[this.wi], total = this.root.v[this.wi];
		this.total.textContent = w.label + ': ' + M.fmt.value(total, w.unit) + ' in total';
		this.resetBtn.disabled = !this.zoomed;
		this.matched.textContent = this.re ? 'Matched: ' + this.matchedShare() : '';
		this.draw();
	};

	/* The share of the total in frames the search matches, each counted
	 * once even when a matched frame holds another: in either orientation,
	 * the sites one of whose frames matches (each name tested once). */
	Flamegraph.prototype.matchedShare = function () {
		var wi = this.wi, re = this.re, sum = 0, seen = new Map(), W = this.forest.W;
		if (!this.share || this.share.re !== re) {
			var hit = new Uint8Array(this.sites.length);
			this.sites.forEach(function (s, i) {
				for (var k = 0; k < s.frames.length; k++) {
					var name = s.frames[k].name, m = seen.get(name);
					if (m === undefined)
						seen.set(name, m = re.test(name));
					if (m) {
						hit[i] = 1;
						break;
					}
				}
			});
			this.share = { re: re, hit: hit };
		}
		var h = this.share.hit;
		for (var i = 0; i < h.length; i++)
			if (h[i])
				sum += W[i * 5 + wi];
		var w = M.weights[wi];
		return M.fmt.pct(sum, this.root.v[wi]) + ' (' + M.fmt.value(sum, w.unit) + ')';
	};

	/* Places the frames: the zoomed one and what it holds across the whole
	 * width, its ancestors above it (faded), full width too. */
	Flamegraph.prototype.layout = function (width) {
		var wi = this.wi, boxes = [], z = this.zoomed || this.root, tree = this.tree;
		var chain = [];
		for (var a = z.parent; a; a = a.parent)
			chain.unshift(a);
		chain.forEach(function (n, row) {
			boxes.push({ n: n, x: 0, w: width, row: row, faded: true });
		});
		var scale = z.v[wi] ? width / z.v[wi] : 0;
		/* a run of siblings each too narrow: one block, if it shows */
		function more(parent, run, x, w, row) {
			if (!run.length || w < MIN_PX)
				return;
			var m = { name: M.fmt.count(run.length) + ' more', parent: parent, kind: 'more', more: run,
				v: [0, 0, 0, 0, 0], b: run[0].b === NOBASE ? NOBASE : [0, 0, 0, 0, 0], kids: [] };
			run.forEach(function (k) { add(m, k.v, k.b); });
			boxes.push({ n: m, x: x, w: w, row: row, faded: false });
		}
		/* row by row, so that when the frames not made yet cost more than
		 * one draw may spend (BUDGET sites looked at), the rows at the top
		 * are whole and the rest follow in the next draws (see draw) */
		var budget = BUDGET, queue = [[z, 0, chain.length]], self = this;
		this.pending = false;
		for (var q = 0; q < queue.length; q++) {
			var n = queue[q][0], x = queue[q][1], row = queue[q][2];
			boxes.push({ n: n, x: x, w: n.v[wi] * scale, row: row, faded: false });
			if (!n.kids) {
				if (budget <= 0 && n.sites.length) {
					self.pending = true;
					continue;
				}
				budget -= n.sites.length;
			}
			var run = [], rx = 0, rw = 0, kids = kidsOf(tree, n);
			for (var i = 0; i < kids.length; i++) {
				var k = kids[i], w = k.v[wi] * scale;
				/* a differential graph leaves out what did not change
				 * (none of its sites did): its room stays blank */
				if (k.c !== NOBASE && !k.c[wi]) {
					more(n, run, rx, rw, row + 1);
					run = [];
					rw = 0;
					x += w;
					continue;
				}
				if (w < MIN_PX) {
					if (!run.length)
						rx = x;
					if (k.v[wi])
						run.push(k);
					rw += w;
				} else {
					more(n, run, rx, rw, row + 1);
					run = [];
					rw = 0;
					queue.push([k, x, row + 1]);
				}
				x += w;
			}
			more(n, run, rx, rw, row + 1);
		}
		return boxes;
	};

	Flamegraph.prototype.draw = function () {
		if (!this.root)
			return;
		var self = this;
		clearTimeout(this.later);
		this.later = null;
		var width = Math.max(this.scroller.clientWidth, 200);
		var boxes = this.layout(width), rows = 0;
		boxes.forEach(function (b) { rows = Math.max(rows, b.row + 1); });
		var empty = !this.root.v[this.wi];
		var height = empty ? 3 * ROW : rows * ROW;
		var ctx = M.fitCanvas(this.canvas, width, height);
		this.boxes = empty ? [] : boxes;
		this.rows = rows;
		ctx.clearRect(0, 0, width, height);
		ctx.font = FONT;
		ctx.textBaseline = 'middle';
		if (empty) {
			var w = M.weights[this.wi];
			ctx.fillStyle = '#57606a';
			ctx.textAlign = 'center';
			ctx.fillText('Nothing to show: no ' + w.label.toLowerCase() + '.', width / 2, 1.5 * ROW);
			return;
		}
		/* the largest change of a drawn frame, for the colours' depth */
		this.most = 0;
		for (var j = 0; this.diff && j < boxes.length; j++) {
			var bn = boxes[j].n;
			if (bn !== this.root)
				this.most = Math.max(this.most, Math.abs(bn.v[this.wi] - bn.b[this.wi]));
		}
		var charW = ctx.measureText('abcdefghijklmnopqrstuvwxyz_ABCDEF::()0123').width / 42;
		for (var i = 0; i < boxes.length; i++)
			this.drawBox(ctx, boxes[i], charW);
		/* a scroll bar came or went with the new height: fit the width again */
		if (this.scroller.clientWidth !== width && this.scroller.clientWidth >= 200 && !this.refitting) {
			this.refitting = true;
			this.draw();
			this.refitting = false;
		}
		/* rows left for later (layout): drawn again once this event is done */
		if (this.pending && !this.refitting)
			this.later = setTimeout(function () { self.draw(); }, 0);
	};

	Flamegraph.prototype.y = function (row) {
		return (this.flame ? this.rows - 1 - row : row) * ROW;
	};

	Flamegraph.prototype.drawBox = function (ctx, b, charW) {
		var y = this.y(b.row), n = b.n;
		ctx.globalAlpha = b.faded ? 0.45 : 1;
		var d = n.v[this.wi] - n.b[this.wi];
		ctx.fillStyle = n.more ? '#d0d7de' : this.re && this.re.test(n.name) ? MATCH : this.diff ?
			diffColor(d >= 0, this.most ? Math.abs(d) / this.most : 0) : M.fmt.frameColor(n.name, n.kind);
		ctx.fillRect(b.x + 0.5, y + 0.5, Math.max(b.w - 1, 0.5), ROW - 1);
		if (n === this.hover) {
			ctx.strokeStyle = '#1f2328';
			ctx.lineWidth = 1.5;
			ctx.strokeRect(b.x + 1, y + 1, Math.max(b.w - 2, 1), ROW - 2);
		}
		if (b.w > 28) {
			var fit = Math.floor((b.w - 8) / charW), text = n.name;
			if (text.length > fit)
				text = fit >= 4 ? text.slice(0, fit - 1) + '\u2026' : '';
			while (text && ctx.measureText(text).width > b.w - 8)
				text = text.length > 4 ? text.slice(0, -2) + '\u2026' : '';
			if (text) {
				ctx.fillStyle = '#1f2328';
				ctx.textAlign = 'left';
				ctx.fillText(text, b.x + 4, y + ROW / 2 + 0.5);
			}
		}
		ctx.globalAlpha = 1;
	};

	Flamegraph.prototype.boxAt = function (ev) {
		var r = this.canvas.getBoundingClientRect();
		var x = ev.clientX - r.left, y = ev.clientY - r.top;
		var row = Math.floor(y / ROW);
		if (this.flame)
			row = this.rows - 1 - row;
		for (var i = 0; i < this.boxes.length; i++) {
			var b = this.boxes[i];
			if (b.row === row && x >= b.x && x < b.x + b.w)
				return b;
		}
		return null;
	};

	Flamegraph.prototype.setHover = function (n) {
		if (n === this.hover)
			return;
		this.hover = n;
		this.draw();
		if (!n) {
			this.tip.hidden = true;
			this.details.textContent = '';
			return;
		}
		var w = M.weights[this.wi], total = this.root.v[this.wi];
		if (!n.more)
			locate(this.tree, n);
		this.details.textContent = n.name + ' \u2014 ' + M.fmt.value(n.v[this.wi], w.unit) + ' ' + w.what +
			' (' + M.fmt.pct(n.v[this.wi], total) + ')' +
			(this.diff ? ', ' + changeText(n, this.wi, w) : '') + (location(n) ? ' \u2014 ' + location(n) : '');
		var rows = M.weights.map(function (x, i) {
			return M.el('tr', { class: x === w ? 'cur' : null },
				M.el('th', { text: x.label }),
				M.el('td', { text: M.fmt.value(n.v[i], x.unit) }));
		});
		/* (replaceChildren would write a null as "null") */
		this.tip.replaceChildren.apply(this.tip, [
			M.el('div', { class: 'tip-title', text: n.name }),
			location(n) ? M.el('div', { class: 'tip-where', text: location(n) }) : null,
			M.el('div', { class: 'tip-share', text: M.fmt.pct(n.v[this.wi], total) + ' of the total' + (this.zoomed ?
				', ' + M.fmt.pct(n.v[this.wi], this.zoomed.v[this.wi]) + ' of the zoomed frame' : '') }),
			this.diff ? M.el('div', { class: 'tip-change', text: changeText(n, this.wi, w) }) : null,
			M.el('table', null, rows)].filter(Boolean));
		this.tip.hidden = false;
	};

	Flamegraph.prototype.onMove = function (ev) {
		var b = this.boxAt(ev);
		this.setHover(b ? b.n : null);
		this.canvas.style.cursor = b ? 'pointer' : 'default';
		if (!b)
			return;
		var r = this.wrap.getBoundingClientRect();
		var x = ev.clientX - r.left + 14, y = ev.clientY - r.top + 16;
		if (x + this.tip.offsetWidth > r.width)
			x = Math.max(0, ev.clientX - r.left - this.tip.offsetWidth - 14);
		this.tip.style.left = x + 'px';
		this.tip.style.top = y + 'px';
	};

	/* Where the frame NAME is drawn (the widest if several), in page
	 * coordinates, or null: for tests and for pointing at a frame. */
	Flamegraph.prototype.rectOf = function (name) {
		var best = null, r = this.canvas.getBoundingClientRect();
		for (var i = 0; i < this.boxes.length; i++) {
			var b = this.boxes[i];
			if (b.n.name === name && (!best || b.w > best.w))
				best = b;
		}
		if (!best)
			return null;
		return { x: r.left + best.x, y: r.top + this.y(best.row), w: best.w, h: ROW, canvasWidth: r.width };
	};

	M.buildTree = buildTree;
	M.diffColor = diffColor;
	M.Flamegraph = Flamegraph;
})(Memtrace);
