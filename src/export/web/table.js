/*
 * table.js - the call sites of a process as a sortable table: a click on a
 * column header sorts by it (again: the other way round), the filter box
 * keeps the sites whose stack mentions a text, a click on a row unfolds
 * its whole stack.  Long tables show their first rows until asked for all;
 * then rows are added as the table is scrolled, CHUNK at a time, so that a
 * recording of 100,000 sites answers every click at once.
 * When the sites carry live_series (the server's GUI: live bytes over time
 * of the sites that allocated the most), a column draws each as a
 * sparkline.
 */
(function (M) {
	'use strict';
	var LIMIT = 50, CHUNK = 200;
	var SPARK_W = 120, SPARK_H = 22;

	/* Live bytes over time as a line over its filled area, scaled to the
	 * series' own highest value. */
	function sparkline(series) {
		var max = Math.max.apply(null, series), n = series.length;
		var pts = series.map(function (v, i) {
			return [n > 1 ? i * SPARK_W / (n - 1) : 0, SPARK_H - 1 - (max ? v / max * (SPARK_H - 3) : 0)];
		});
		var c = M.el('canvas', { class: 'spark', 'aria-hidden': 'true' });
		var g = M.fitCanvas(c, SPARK_W, SPARK_H);
		g.beginPath();
		g.moveTo(0, SPARK_H);
		pts.forEach(function (p) { g.lineTo(p[0], p[1]); });
		g.lineTo(SPARK_W, SPARK_H);
		g.fillStyle = 'rgba(9,105,218,0.15)';
		g.fill();
		g.beginPath();
		pts.forEach(function (p, i) { (i ? g.lineTo : g.moveTo).call(g, p[0], p[1]); });
		g.strokeStyle = '#0969da';
		g.lineWidth = 1.3;
		g.stroke();
		return c;
	}

	/* a site is named by its most useful frame (functions.js) */
	function useful(s) {
		if (s._useful === undefined)
			s._useful = M.usefulFrame ? M.usefulFrame(s.frames) : 0;
		return s._useful;
	}

	function leafName(s) {
		return s.frames.length ? s.frames[useful(s)].name : '[no stack]';
	}

	function leafWhere(s) {
		return s.frames.length ? M.fmt.where(s.frames[useful(s)]) : '';
	}

	/* A frame as the rows tell frames apart: its name and where it is. */
	function frameKey(f) {
		return f ? f.name + '\n' + M.fmt.where(f, true) : '';
	}

	/* What frame I of site S says to tell its row apart: its caller at
	 * another line, or a frame further out; DEPTH adds how far out. */
	function viaText(s, i, depth) {
		var f = s.frames[i], where = M.fmt.where(f), d = i - useful(s);
		if (d === 1)
			return where ? 'at ' + where : '';
		return 'via ' + f.name + (where ? ' (' + where + ')' : '') + (depth ? ', ' + d + ' frames out' : '');
	}

	/* Sites whose rows would read alike (the same function, caller and
	 * location: a helper called along several paths, or code without
	 * symbols, "lib+0x16a61 from lib+0x9c1a" six times over) are told
	 * apart by the frame further out where each one's stack parts from
	 * the others' (in s._via, '' for the rest): each such group split
	 * down the stacks, where its frames differ, until each part is one
	 * site; the frame of its last split names it.  Two that part by
	 * frames of the same name also say how far out. */
	function distinguish(sites) {
		var groups = new Map();
		sites.forEach(function (s) {
			s._via = '';
			s._at = -1;
			var u = useful(s), k = frameKey(s.frames[u]) + '\n' + (s.frames[u + 1] ? s.frames[u + 1].name : '');
			var g = groups.get(k);
			if (!g)
				groups.set(k, g = []);
			g.push(s);
		});
		groups.forEach(function (group) {
			if (group.length < 2)
				return;
			var work = [[group, 1]];
			while (work.length) {
				var w = work.pop(), g = w[0], d = w[1], parts = new Map(), deeper = false;
				g.forEach(function (s) {
					var f = s.frames[useful(s) + d], k = frameKey(f);
					deeper = deeper || !!f;
					var part = parts.get(k);
					if (!part)
						parts.set(k, part = []);
					part.push(s);
				});
				if (!deeper)
					continue; /* the same stacks to the end: nothing tells them apart */
				if (parts.size > 1)
					g.forEach(function (s) {
						if (s.frames[useful(s) + d])
							s._at = useful(s) + d;
					});
				parts.forEach(function (part) {
					if (part.length > 1)
						work.push([part, d + 1]);
				});
			}
			var seen = new Map();
			group.forEach(function (s) {
				if (s._at >= 0) {
					var t = viaText(s, s._at, false);
					seen.set(t, (seen.get(t) || 0) + 1);
				}
			});
			group.forEach(function (s) {
				if (s._at >= 0)
					s._via = viaText(s, s._at, seen.get(viaText(s, s._at, false)) > 1);
			});
		});
	}

	var COLUMNS = [
		{ key: 'allocations', label: 'Allocations', num: true },
		{ key: 'allocated_bytes', label: 'Allocated', num: true, bytes: true },
		{ key: 'leaked_bytes', label: 'Leaked', num: true, bytes: true, count: 'leaked_allocations' },
		{ key: 'peak_bytes', label: 'Peak', num: true, bytes: true },
		{ key: 'temporary_allocations', label: 'Temporary', num: true },
		{ key: 'function', label: 'Function', get: leafName },
		{ key: 'location', label: 'Location', get: leafWhere },
	];

	function SiteTable(container) {
		var self = this;
		this.key = 'allocated_bytes';
		this.desc = true;
		this.all = false;
		this.open = new Set();
		this.filter = M.el('input', {
			type: 'search', class: 'tbl-filter', placeholder: 'Filter by function or file',
			'aria-label': 'filter call sites', oninput: function () { self.render(); },
		});
		this.count = M.el('span', { class: 'tbl-count' });
		this.heads = COLUMNS.map(function (c) {
			return M.el('th', { 'data-key': c.key, class: c.num ? 'num' : null, scope: 'col' },
				M.el('button', { type: 'button', onclick: function () { self.sortBy(c.key); } },
					c.label, M.el('span', { class: 'arrow', 'aria-hidden': 'true' })));
		});
		this.sparkHead = M.el('th', { class: 'spark-col', scope: 'col', hidden: true,
			title: 'live bytes over time, highest in each interval' },
			M.el('span', { text: 'Live over time' }));
		this.body = M.el('tbody');
		this.more = M.el('button', {
			type: 'button', class: 'btn', hidden: true,
			onclick: function () {
				self.all = true;
				self.append(self.shown + CHUNK);
			},
		});
		container.appendChild(M.el('div', { class: 'tbl' },
			M.el('div', { class: 'toolbar' }, this.filter, this.count),
			this.scroller = M.el('div', { class: 'tbl-scroll', onscroll: function () { self.grow(); } },
				M.el('table', { class: 'sites' },
					M.el('thead', null, M.el('tr', null, this.heads, this.sparkHead)), this.body)),
			M.el('div', { class: 'tbl-more' }, this.more)));
	}

	/* Near the bottom of a table shown whole: its next rows. */
	SiteTable.prototype.grow = function () {
		var sc = this.scroller;
		if (!this.all || !this.rows || this.shown >= this.rows.length ||
				sc.scrollTop + sc.clientHeight < sc.scrollHeight - 400)
			return;
		this.append(this.shown + CHUNK);
	};

	/* Rows up to N of the sorted ones, after those already there. */
	SiteTable.prototype.append = function (n) {
		var self = this, frag = document.createDocumentFragment();
		var end = Math.min(n, this.rows.length);
		for (var i = this.shown; i < end; i++) {
			var s = this.rows[i];
			frag.appendChild(self.row(s));
			if (self.open.has(s))
				frag.appendChild(self.stack(s));
		}
		this.shown = end;
		this.body.appendChild(frag);
		this.more.hidden = true;
	};

	SiteTable.prototype.setSites = function (sites) {
		this.sites = sites;
		distinguish(sites);
		this.spark = sites.some(function (s) { return s.live_series; });
		this.sparkHead.hidden = !this.spark;
		this.open = new Set();
		this.all = false;
		this.render();
	};

	SiteTable.prototype.sortBy = function (key) {
		var col = COLUMNS.find(function (c) { return c.key === key; });
		this.chosen = true; /* the user's: kept as the data changes */
		if (this.key === key)
			this.desc = !this.desc;
		else
			this.desc = !!col.num;
		this.key = key;
		this.render();
	};

	SiteTable.prototype.sorted = function () {
		var col = COLUMNS.find(function (c) { return c.key === this.key; }, this);
		var get = col.get || function (s) { return s[col.key]; };
		var dir = this.desc ? -1 : 1, q = this.filter.value.trim().toLowerCase();
		var rows = !q ? this.sites.slice() : this.sites.filter(function (s) {
			/* frames are shared objects: each keeps its text to search, and
			 * whether the last query found it there */
			for (var i = 0; i < s.frames.length; i++) {
				var f = s.frames[i];
				if (f._q !== q) {
					if (f._text === undefined)
						f._text = (f.name + '\n' + M.fmt.where(f, true)).toLowerCase();
					f._q = q;
					f._hit = f._text.indexOf(q) >= 0;
				}
				if (f._hit)
					return true;
			}
			return false;
		});
		/* ties keep a fixed order: by allocated bytes, then by name */
		rows.sort(function (a, b) {
			var x = get(a), y = get(b);
			if (x !== y)
				return (x < y ? -1 : 1) * dir;
			if (a.allocated_bytes !== b.allocated_bytes)
				return b.allocated_bytes - a.allocated_bytes;
			return leafName(a) < leafName(b) ? -1 : leafName(a) > leafName(b) ? 1 : 0;
		});
		return rows;
	};

	SiteTable.prototype.render = function () {
		var self = this, rows = this.sorted();
		this.heads.forEach(function (th) {
			var on = th.getAttribute('data-key') === self.key;
			th.setAttribute('aria-sort', on ? (self.desc ? 'descending' : 'ascending') : 'none');
			th.querySelector('.arrow').textContent = on ? (self.desc ? '\u25bc' : '\u25b2') : '';
		});
		this.rows = rows;
		this.shown = 0;
		this.body.replaceChildren();
		this.append(this.all ? CHUNK : LIMIT);
		this.count.textContent = rows.length === this.sites.length ? M.fmt.count(rows.length) + ' call sites' :
			M.fmt.count(rows.length) + ' of ' + M.fmt.count(this.sites.length) + ' call sites';
		this.more.hidden = this.all || this.shown === rows.length;
		this.more.textContent = 'Show all ' + M.fmt.count(rows.length) + ' call sites';
	};

	SiteTable.prototype.row = function (s) {
		var self = this;
		var cells = COLUMNS.map(function (c) {
			if (c.key === 'function') {
				var caller = s.frames.length > useful(s) + 1 ? s.frames[useful(s) + 1].name : '';
				var via = s._via;
				return M.el('td', { class: 'fn' }, M.el('span', { class: 'name', text: leafName(s) }),
					caller ? M.el('span', { class: 'caller', text: 'from ' + caller }) : null,
					via ? M.el('span', { class: 'via', text: via }) : null);
			}
			if (c.key === 'location') {
				var f = s.frames[useful(s)];
				return M.el('td', { class: 'where', title: f ? M.fmt.where(f, true) : null,
					text: leafWhere(s) });
			}
			var v = s[c.key] || 0;
			var title = c.bytes ? M.fmt.value(v, 'bytes') : M.fmt.count(v);
			if (c.count)
				title += ' in ' + M.fmt.value(s[c.count] || 0, 'blocks');
			return M.el('td', { class: 'num' + (v ? '' : ' zero'), title: title,
				text: c.bytes ? M.fmt.bytes(v) : M.fmt.count(v) });
		});
		if (this.spark) {
			cells.push(M.el('td', { class: 'spark-col', title: s.live_series ? 'highest live: ' +
				M.fmt.value(Math.max.apply(null, s.live_series), 'bytes') : 'not among the sites drawn' },
				s.live_series ? sparkline(s.live_series) : null));
		}
		var tr = M.el('tr', {
			class: 'site' + (this.open.has(s) ? ' open' : ''), tabindex: '0',
			onclick: function () { self.toggle(s, tr); },
			onkeydown: function (ev) { if (ev.key === 'Enter') self.toggle(s, tr); },
		}, cells);
		return tr;
	};

	/* Unfolds (or folds) the stack of site S under its row TR, in place. */
	SiteTable.prototype.toggle = function (s, tr) {
		if (this.open.has(s)) {
			this.open.delete(s);
			tr.classList.remove('open');
			if (tr.nextSibling && tr.nextSibling.classList.contains('stack'))
				tr.nextSibling.remove();
		} else {
			this.open.add(s);
			tr.classList.add('open');
			tr.after(this.stack(s));
		}
	};

	SiteTable.prototype.stack = function (s) {
		var items = s.frames.map(function (f, i) {
			return M.el('li', { class: i === useful(s) ? 'useful' : null }, M.el('span', { class: 'name', text: f.name }),
				f.inlined ? M.el('span', { class: 'tag', text: 'inlined' }) : null,
				M.el('span', { class: 'where', text: M.fmt.where(f, true) }));
		});
		return M.el('tr', { class: 'stack' },
			M.el('td', { colspan: String(COLUMNS.length + (this.spark ? 1 : 0)) }, M.el('ol', null, items)));
	};

	M.SiteTable = SiteTable;
})(Memtrace);
