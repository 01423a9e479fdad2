/*
 * functions.js - heaptrack's views by function on the report page: a table
 * of every function of the stacks with its self figures (what it asked the
 * allocator for itself: the first frame of a site) and inclusive ones
 * (every allocation made while it was on the stack, once per site even
 * when it recursed), for each weight; a click on a function shows its
 * callers and callees with what went through each, and a click on one of
 * those moves to it.  The same figures as `memtrace report --functions`,
 * `--callers FN` and `--callees FN` (report/functions.c), computed here
 * from the page's sites.  Also the site's most useful frame (the first
 * outside the allocator and the runtime), which the call-site table names
 * a site by.
 */
(function (M) {
	'use strict';
	var LIMIT = 100, CHUNK = 200;
	var W = [
		{ key: 'allocations', label: 'Allocations' },
		{ key: 'allocated_bytes', label: 'Allocated', bytes: true },
		{ key: 'leaked_bytes', label: 'Leaked', bytes: true },
		{ key: 'peak_bytes', label: 'Peak', bytes: true },
		{ key: 'temporary_allocations', label: 'Temporary' },
	];
	/* the C and C++ runtime, by file name (analyse/functions.c's list) */
	var RUNTIME = /^(libc\.so|libc-|libstdc\+\+\.so|libgcc_s\.so|ld-linux|ld-musl|libc\+\+\.so|libc\+\+abi\.so|libmemtrace-preload|libpthread\.so|libm\.so)/;

	function usefulFrame(frames) {
		var at = 0;
		for (var i = 0; i < frames.length; i++) {
			var f = frames[i];
			if (f.module && RUNTIME.test(M.fmt.basename(f.module)))
				continue;
			if (/^operator (new|delete)/.test(f.name))
				continue;
			at = i;
			break;
		}
		/* a library's own allocator (analyse/functions.c's rule): the
		 * frames of one module up to one named as an allocation function,
		 * and the functions so named that called it */
		var same = function (f) { return f.module && f.module === frames[at].module; };
		var wrapper = function (f) { return f.kind !== 'unknown' && /alloc/i.test(f.name); };
		for (var j = at + 1; j < frames.length && j <= at + 2 && same(frames[j]); j++) {
			if (!wrapper(frames[j]))
				continue;
			var k = j + 1;
			while (k + 1 < frames.length && same(frames[k]) && wrapper(frames[k]))
				k++;
			return k < frames.length ? k : at;
		}
		return at;
	}

	function zero() {
		var o = {};
		W.forEach(function (w) { o[w.key] = 0; });
		return o;
	}

	function add(to, s) {
		W.forEach(function (w) { to[w.key] += s[w.key] || 0; });
	}

	/* The functions of SITES: {list, byName, sites}; each with self, incl
	 * and sites.  One pass, no allocation per site: a function remembers
	 * the last site that counted it (recursion counts once). */
	var generation = 0;

	function build(sites) {
		var byName = new Map(), list = [], gen = ++generation;
		for (var si = 0; si < sites.length; si++) {
			/* W's order */
			var s = sites[si], fr = s.frames, v0 = s.allocations || 0, v1 = s.allocated_bytes || 0,
				v2 = s.leaked_bytes || 0, v3 = s.peak_bytes || 0, v4 = s.temporary_allocations || 0;
			for (var i = 0; i < fr.length; i++) {
				/* frames are shared objects: each remembers its function */
				var f = fr[i], x = f._fnGen === gen ? f._fn : null;
				if (!x) {
					x = byName.get(f.name);
					if (!x) {
						x = { name: f.name, file: f.file, module: f.module, s: [0, 0, 0, 0, 0],
							n: [0, 0, 0, 0, 0], sites: 0, last: -1 };
						byName.set(f.name, x);
						list.push(x);
					}
					f._fnGen = gen;
					f._fn = x;
				}
				if (i === 0) {
					var a = x.s;
					a[0] += v0; a[1] += v1; a[2] += v2; a[3] += v3; a[4] += v4;
				}
				if (x.last !== si) {
					var b = x.n;
					x.last = si;
					b[0] += v0; b[1] += v1; b[2] += v2; b[3] += v3; b[4] += v4;
					x.sites++;
				}
			}
		}
		/* the figures by W's keys, as the table reads them */
		list.forEach(function (x) {
			x.self = {};
			x.incl = {};
			W.forEach(function (w, k) {
				x.self[w.key] = x.s[k];
				x.incl[w.key] = x.n[k];
			});
		});
		return { list: list, byName: byName, sites: sites };
	}

	/* The callers and callees of function NAME in FNS's sites (maps of
	 * name -> figures through that edge): the frame above its innermost
	 * call, the frame below its outermost one (or the allocator). */
	function edges(fns, name) {
		var callers = new Map(), callees = new Map();
		function edge(map, n, s) {
			var e = map.get(n);
			if (!e)
				map.set(n, e = { name: n, incl: zero(), sites: 0 });
			add(e.incl, s);
			e.sites++;
		}
		fns.sites.forEach(function (s) {
			var inner = -1, outer = -1;
			for (var i = 0; i < s.frames.length; i++)
				if (s.frames[i].name === name) {
					if (inner < 0)
						inner = i;
					outer = i;
				}
			if (inner < 0)
				return;
			edge(callers, inner + 1 < s.frames.length ? s.frames[inner + 1].name : '[root]', s);
			edge(callees, outer > 0 ? s.frames[outer - 1].name : '[the allocator]', s);
		});
		return { callers: callers, callees: callees };
	}

	function cell(v, w) {
		return M.el('td', { class: 'num' + (v ? '' : ' zero'), 'data-v': String(v), title: w.bytes ? M.fmt.value(v, 'bytes') :
			M.fmt.count(v), text: w.bytes ? M.fmt.bytes(v) : M.fmt.count(v) });
	}

	function FunctionTable(container) {
		var self = this;
		this.key = 'incl.allocated_bytes';
		this.desc = true;
		this.all = false;
		this.filter = M.el('input', { type: 'search', class: 'tbl-filter', placeholder: 'Filter by function',
			'aria-label': 'filter functions', oninput: function () { self.render(); } });
		this.count = M.el('span', { class: 'tbl-count' });
		var top = [M.el('th', { scope: 'col' })], sub = [M.el('th', { scope: 'col' })];
		this.heads = [];
		W.forEach(function (w) {
			top.push(M.el('th', { colspan: '2', class: 'num group', scope: 'colgroup', text: w.label }));
			['self', 'incl'].forEach(function (k) {
				var key = k + '.' + w.key;
				var th = M.el('th', { class: 'num', scope: 'col', 'data-key': key },
					M.el('button', { type: 'button', onclick: function () { self.sortBy(key); } },
						k === 'self' ? 'self' : 'incl.', M.el('span', { class: 'arrow', 'aria-hidden': 'true' })));
				self.heads.push(th);
				sub.push(th);
			});
		});
		top[0].textContent = '';
		sub[0] = M.el('th', { scope: 'col', 'data-key': 'name' }, M.el('button', { type: 'button',
			onclick: function () { self.sortBy('name'); } }, 'Function', M.el('span', { class: 'arrow' })));
		this.heads.push(sub[0]);
		this.body = M.el('tbody');
		this.more = M.el('button', { type: 'button', class: 'btn', hidden: true,
			onclick: function () { self.all = true; self.append(self.shown + CHUNK); } });
		this.detail = M.el('div', { class: 'fn-detail' });
		container.appendChild(M.el('div', { class: 'tbl' },
			M.el('div', { class: 'toolbar' }, this.filter, this.count),
			this.scroller = M.el('div', { class: 'tbl-scroll', onscroll: function () { self.grow(); } },
				M.el('table', { class: 'sites functions' },
					M.el('thead', null, M.el('tr', null, top), M.el('tr', null, sub)), this.body)),
			M.el('div', { class: 'tbl-more' }, this.more), this.detail));
	}

	FunctionTable.prototype.setSites = function (sites) {
		/* the last two sets of sites stay made, as the flamegraph's */
		var c = (this.made || []).filter(function (m) { return m.sites === sites; })[0];
		if (!c) {
			c = { sites: sites, fns: build(sites) };
			this.made = [c].concat((this.made || []).slice(0, 1));
		}
		this.fns = c.fns;
		this.all = false;
		this.selected = null;
		this.render();
		this.showDetail();
	};

	FunctionTable.prototype.sortBy = function (key) {
		this.desc = this.key === key ? !this.desc : key !== 'name';
		this.key = key;
		this.render();
	};

	FunctionTable.prototype.value = function (f, key) {
		if (key === 'name')
			return f.name;
		var p = key.split('.');
		return f[p[0]][p[1]];
	};

	FunctionTable.prototype.render = function () {
		var self = this, q = this.filter.value.trim().toLowerCase(), dir = this.desc ? -1 : 1;
		var rows = this.fns.list.filter(function (f) { return !q || f.name.toLowerCase().indexOf(q) >= 0; });
		rows.sort(function (a, b) {
			var x = self.value(a, self.key), y = self.value(b, self.key);
			if (x !== y)
				return (x < y ? -1 : 1) * dir;
			return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
		});
		this.heads.forEach(function (th) {
			var on = th.getAttribute('data-key') === self.key;
			th.setAttribute('aria-sort', on ? (self.desc ? 'descending' : 'ascending') : 'none');
			var a = th.querySelector('.arrow');
			if (a)
				a.textContent = on ? (self.desc ? '\u25bc' : '\u25b2') : '';
		});
		this.rows = rows;
		this.shown = 0;
		this.body.replaceChildren();
		this.append(this.all ? CHUNK : LIMIT);
		this.count.textContent = M.fmt.count(rows.length) + (rows.length === 1 ? ' function' : ' functions');
		this.more.hidden = this.all || this.shown === rows.length;
		this.more.textContent = 'Show all ' + M.fmt.count(rows.length) + ' functions';
	};

	/* Rows are added as the table is scrolled, as the call sites' are. */
	FunctionTable.prototype.grow = function () {
		var sc = this.scroller;
		if (this.all && this.rows && this.shown < this.rows.length &&
				sc.scrollTop + sc.clientHeight >= sc.scrollHeight - 400)
			this.append(this.shown + CHUNK);
	};

	FunctionTable.prototype.append = function (n) {
		var frag = document.createDocumentFragment(), end = Math.min(n, this.rows.length);
		for (var i = this.shown; i < end; i++)
			frag.appendChild(this.row(this.rows[i]));
		this.shown = end;
		this.body.appendChild(frag);
		this.more.hidden = true;
	};

	FunctionTable.prototype.row = function (f) {
		var self = this, cells = [M.el('td', { class: 'fn' }, M.el('span', { class: 'name', text: f.name }),
			f.file ? M.el('span', { class: 'caller', text: M.fmt.basename(f.file) }) : null)];
		W.forEach(function (w) {
			cells.push(cell(f.self[w.key], w));
			cells.push(cell(f.incl[w.key], w));
		});
		return M.el('tr', { class: 'function' + (this.selected === f ? ' open' : ''), tabindex: '0',
			'data-fn': f.name, onclick: function () { self.select(f.name); },
			onkeydown: function (ev) { if (ev.key === 'Enter') self.select(f.name); } }, cells);
	};

	/* Shows function NAME's callers and callees. */
	FunctionTable.prototype.select = function (name) {
		this.selected = this.fns.byName.get(name) || null;
		var rows = this.body.querySelectorAll('tr.function');
		for (var i = 0; i < rows.length; i++)
			rows[i].classList.toggle('open', rows[i].getAttribute('data-fn') === name);
		this.showDetail();
		/* and its frames highlighted in the flamegraph, once this click
		 * has been answered */
		var fg = M.report && M.report.flame;
		if (fg && this.selected) {
			fg.searchBox.value = '^' + name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
			setTimeout(function () { fg.search(fg.searchBox.value); }, 0);
		}
	};

	FunctionTable.prototype.edges = function (title, cls, map) {
		var self = this;
		var list = Array.from(map.values()).sort(function (a, b) {
			return b.incl.allocated_bytes - a.incl.allocated_bytes || b.incl.allocations - a.incl.allocations ||
				(a.name < b.name ? -1 : 1);
		});
		return M.el('div', { class: 'fn-edges ' + cls },
			M.el('h3', { text: title }),
			M.el('table', { class: 'sites functions' },
				M.el('thead', null, M.el('tr', null, M.el('th', { scope: 'col', text: 'Function' }),
					W.map(function (w) { return M.el('th', { class: 'num', scope: 'col', text: w.label }); }))),
				M.el('tbody', null, list.map(function (e) {
					var known = self.fns.byName.has(e.name);
					return M.el('tr', { class: 'edge', 'data-fn': e.name, tabindex: known ? '0' : null,
						onclick: known ? function () { self.select(e.name); } : null },
					M.el('td', { class: 'fn' }, M.el('span', { class: 'name', text: e.name })),
					W.map(function (w) { return cell(e.incl[w.key], w); }));
				}))));
	};

	FunctionTable.prototype.showDetail = function () {
		var f = this.selected;
		if (!f) {
			this.detail.replaceChildren(M.el('p', { class: 'hint',
				text: 'Click a function for its callers and callees.' }));
			return;
		}
		var e = edges(this.fns, f.name);
		this.detail.replaceChildren(
			M.el('h3', { class: 'fn-title', text: f.name }),
			M.el('p', { class: 'hint', text: 'What went through each call: the allocations made while ' +
				f.name + ' was called from (or called) that function.' }),
			M.el('div', { class: 'fn-pair' }, this.edges('Callers', 'callers', e.callers),
				this.edges('Callees', 'callees', e.callees)));
	};

	M.FunctionTable = FunctionTable;
	M.usefulFrame = usefulFrame;
	M.functionsOf = build;
})(Memtrace);
