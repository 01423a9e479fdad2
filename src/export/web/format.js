/*
 * format.js - what the report's scripts share: figures as people read them,
 * frame colours (the same as the SVG flamegraph's, export/svg.c), and a
 * small DOM builder.  Everything lives in the global Memtrace object, as the
 * page is a concatenation of plain scripts, not modules.
 */
var Memtrace = window.Memtrace || (window.Memtrace = {});

(function (M) {
	'use strict';

	/* 1234567 -> "1,234,567" */
	function count(n) {
		return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	}

	/* 156000 -> "156 KB": decimal units, as `memtrace report` prints them */
	function bytes(n) {
		var units = ['B', 'KB', 'MB', 'GB', 'TB'];
		if (n < 1000)
			return Math.round(n) + ' B';
		var u = 0;
		while (n >= 1000 && u < units.length - 1) {
			n /= 1000;
			u++;
		}
		return n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0) + ' ' + units[u];
	}

	/* A figure in full with its unit: "156,000 bytes", "1 allocation" */
	function value(n, unit) {
		if (unit === 'bytes')
			return count(n) + (n === 1 ? ' byte' : ' bytes');
		return count(n) + ' ' + (n === 1 ? unit.replace(/s$/, '') : unit);
	}

	/* A figure in short: bytes scaled, counts with separators */
	function short(n, unit) {
		return unit === 'bytes' ? bytes(n) : count(n);
	}

	function pct(part, whole) {
		return whole > 0 ? (100 * part / whole).toFixed(2) + '%' : '0.00%';
	}

	function seconds(s) {
		if (!s)
			return '0 s';
		if (s < 1)
			return (s * 1000).toFixed(s < 0.01 ? 2 : s < 0.1 ? 1 : 0) + ' ms';
		if (s < 120)
			return s.toFixed(s < 10 ? 3 : 1) + ' s';
		var m = Math.floor(s / 60);
		return m + ' min ' + Math.round(s - 60 * m) + ' s';
	}

	/* A short span with its own unit, never rounded to zero: 0.8 us,
	 * 12 ns (the clock's steps, an interval of the chart) */
	function span(s) {
		if (s >= 0.001 || !s)
			return seconds(s);
		if (s >= 1e-6)
			return +(s * 1e6).toPrecision(2) + ' \u00b5s';
		return +(s * 1e9).toPrecision(2) + ' ns';
	}

	/* How a process of the report data ended, as its page says it */
	function state(p) {
		if (p.exit_status !== null && p.exit_status !== undefined)
			return p.exit_status < 0 ? 'killed by ' + (p.signal || 'signal ' + -p.exit_status) :
				'exited with status ' + p.exit_status;
		if (p.exec_path)
			return 'replaced by exec of ' + p.exec_path;
		return 'still running when tracing stopped';
	}

	function basename(path) {
		return path ? String(path).replace(/.*\//, '') : '';
	}

	/* FNV-1a over the UTF-8 bytes, as svg.c hashes names */
	function hash(s) {
		var b = new TextEncoder().encode(s), h = 2166136261;
		for (var i = 0; i < b.length; i++)
			h = Math.imul(h ^ b[i], 16777619) >>> 0;
		return h;
	}

	/* Warm colours by a hash of the name: reds and oranges for the
	 * program's own code, ambers and yellows for libraries, grey when the
	 * symbol is unknown. */
	function frameColor(name, kind) {
		var h = hash(name);
		var v1 = (h & 0xff) / 255, v2 = (h >>> 8 & 0xff) / 255, v3 = (h >>> 16 & 0xff) / 255;
		switch (kind) {
		case 'program':
			return hsl(2 + 28 * v1, 72 + 16 * v2, 58 + 8 * v3);
		case 'library':
			return hsl(38 + 16 * v1, 62 + 16 * v2, 58 + 8 * v3);
		case 'unknown':
			return hsl(0, 0, 72 + 6 * v1);
		default:
			return hsl(215, 14, 74);
		}
	}

	function hsl(h, s, l) {
		return 'hsl(' + h.toFixed(1) + ',' + s.toFixed(1) + '%,' + l.toFixed(1) + '%)';
	}

	/* el('div', {class: 'x', onclick: f}, child, 'text', ...) */
	function el(tag, attrs) {
		var e = document.createElement(tag);
		for (var k in attrs || {}) {
			var v = attrs[k];
			if (v === undefined || v === null || v === false)
				continue;
			if (k.slice(0, 2) === 'on')
				e.addEventListener(k.slice(2), v);
			else if (k === 'text')
				e.textContent = v;
			else
				e.setAttribute(k, v === true ? '' : v);
		}
		for (var i = 2; i < arguments.length; i++)
			append(e, arguments[i]);
		return e;
	}

	function append(e, c) {
		if (c === undefined || c === null || c === false)
			return;
		if (Array.isArray(c))
			c.forEach(function (x) { append(e, x); });
		else
			e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
	}

	/* A canvas sized to its box, sharp on high-density screens; returns its
	 * 2D context scaled to CSS pixels. */
	function fitCanvas(canvas, width, height) {
		var r = window.devicePixelRatio || 1;
		canvas.style.width = width + 'px';
		canvas.style.height = height + 'px';
		canvas.width = Math.round(width * r);
		canvas.height = Math.round(height * r);
		var ctx = canvas.getContext('2d');
		ctx.setTransform(r, 0, 0, r, 0, 0);
		return ctx;
	}

	/* Calls FN whenever ELEMENT's width changes, and once at first: the
	 * canvases are sized to their box, so they are drawn again. */
	function onWidthChange(element, fn) {
		var lastWidth = 0;
		new ResizeObserver(function () {
			if (element.clientWidth !== lastWidth) {
				lastWidth = element.clientWidth;
				fn();
			}
		}).observe(element);
	}

	/* The weights a flamegraph can show, in --weight's names: the site
	 * field each sums and the unit. */
	M.weights = [
		{ name: 'bytes', label: 'Allocated bytes', field: 'allocated_bytes', unit: 'bytes', what: 'allocated' },
		{ name: 'allocations', label: 'Allocations', field: 'allocations', unit: 'allocations', what: 'made' },
		{ name: 'leaked', label: 'Leaked bytes', field: 'leaked_bytes', unit: 'bytes', what: 'leaked' },
		{ name: 'peak', label: 'Bytes at peak', field: 'peak_bytes', unit: 'bytes', what: 'live at the peak' },
		{ name: 'temporary', label: 'Temporary allocations', field: 'temporary_allocations',
		  unit: 'allocations', what: 'temporary' },
	];

	/* The choices of the leak-kind selector, when a leak scan ran at the
	 * end (valgrind's kinds, the site fields KIND_allocations and
	 * KIND_bytes): the first is the default, LeakSanitizer's rule; "all"
	 * is every block not freed, what "leaked" counts without a scan. */
	M.leakKinds = [
		{ name: 'lost', label: 'definitely + indirectly lost', kinds: ['definite', 'indirect'] },
		{ name: 'definite', label: 'definitely lost', kinds: ['definite'] },
		{ name: 'indirect', label: 'indirectly lost', kinds: ['indirect'] },
		{ name: 'possible', label: 'possibly lost', kinds: ['possible'] },
		{ name: 'reachable', label: 'still held (reachable)', kinds: ['reachable'] },
		{ name: 'all', label: 'all not freed', kinds: null },
	];

	function leakKind(name) {
		return M.leakKinds.filter(function (k) { return k.name === name; })[0] || M.leakKinds[0];
	}

	/* [allocations, bytes] of the blocks of leak kind K (a M.leakKinds
	 * entry) in O: a site or a process's leak_kinds. */
	function ofKind(o, k) {
		var n = 0, b = 0;
		(k.kinds || []).forEach(function (x) {
			n += o[x + '_allocations'] || 0;
			b += o[x + '_bytes'] || 0;
		});
		return [n, b];
	}

	/* The sites of process PROC with their leaked_* figures those of the
	 * blocks of leak kind NAME (the others as they are); the sites
	 * themselves without a scan or for "all".  Made once per kind. */
	function kindSites(proc, name) {
		var all = sites(proc), k = leakKind(name);
		if (!proc.leak_kinds || !k.kinds)
			return all;
		proc._kindSites = proc._kindSites || {};
		if (!proc._kindSites[k.name])
			proc._kindSites[k.name] = all.map(function (s) {
				var o = Object.assign({}, s), v = ofKind(s, k);
				o.leaked_allocations = v[0];
				o.leaked_bytes = v[1];
				return o;
			});
		return proc._kindSites[k.name];
	}

	/* The sites of process PROC of the page's data (compact arrays, see
	 * report.js) as objects whose frames, leaf first, are objects too;
	 * computed once per process. */
	function sites(proc) {
		if (proc._sites)
			return proc._sites;
		var fi = index(proc.frame_fields), si = index(proc.site_fields);
		var frames = proc.frames.map(function (f) {
			var module = f[fi.module] >= 0 ? proc.modules[f[fi.module]] : null;
			return {
				name: f[fi.name], line: f[fi.line], module: module, inlined: !!f[fi.inlined],
				file: f[fi.file] >= 0 ? proc.files[f[fi.file]] : null,
				kind: !f[fi.symbolized] ? 'unknown' : module && module === proc.exe ?
					'program' : 'library',
			};
		});
		/* a site's stack: its frames' indices, or (the processes of the
		 * page) the node of its leaf in a tree of stacks, [frame, parent] */
		var stacks = proc.stacks || [];
		function chain(node) {
			var out = [];
			for (; node >= 0; node = stacks[node][1])
				out.push(frames[stacks[node][0]]);
			return out;
		}
		proc._sites = proc.sites.map(function (s) {
			var o = {};
			proc.site_fields.forEach(function (k) { o[k] = s[si[k]]; });
			o.frames = si.stack !== undefined ? chain(s[si.stack]) : s[si.frames].map(function (i) {
				return frames[i];
			});
			delete o.stack;
			return o;
		});
		return proc._sites;
	}

	function index(fields) {
		var o = {};
		fields.forEach(function (k, i) { o[k] = i; });
		return o;
	}

	/* "file:line" of a frame, else its module, else '' */
	function where(f, full) {
		if (f.file)
			return (full ? f.file : basename(f.file)) + (f.line ? ':' + f.line : '');
		return f.module ? (full ? f.module : basename(f.module)) : '';
	}

	M.sites = sites;
	M.kindSites = kindSites;
	M.leakKind = leakKind;
	M.ofKind = ofKind;
	M.fmt = {
		count: count, bytes: bytes, value: value, short: short, pct: pct, seconds: seconds, span: span,
		basename: basename, frameColor: frameColor, where: where, state: state,
	};
	M.el = el;
	M.fitCanvas = fitCanvas;
	M.onWidthChange = onWidthChange;
})(Memtrace);
