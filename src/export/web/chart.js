/*
 * chart.js - memory over time on a canvas, from a process's timeline (a
 * fixed number of equal time buckets, see html.c): the heap in use
 * (the highest it was in each bucket), the bytes leaked (blocks never freed,
 * counted from the moment they were allocated), the allocations per
 * second (and of them the temporary ones, heaptrack's second chart) and the
 * frees per second, with the peak and the recording's markers; or, switched
 * to process memory, the heap beside the resident memory (and its
 * anonymous part) the recorder sampled.  Hovering shows the
 * figures of a bucket.  Dragging across the chart selects a time range:
 * the chart zooms into it, and whoever set onBrush (the server's GUI:
 * every view, through the from and to filters) is told.  Under the chart,
 * its resolution: how long one interval is.
 */
(function (M) {
	'use strict';
	var HEIGHT = 260;
	var PAD = { left: 70, right: 78, top: 18, bottom: 30 };
	var GAP = 8; /* between an axis and its labels */
	var FONT = '11px system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif';
	var C = { heap: '#0969da', heapFill: 'rgba(9,105,218,0.14)', leak: '#cf222e', rss: '#bc4c00', anon: '#8c959f', mapped: '#1b7c83', rate: 'rgba(130,80,223,0.28)', frees: 'rgba(26,127,55,0.30)',
		temp: 'rgba(191,135,0,0.55)',
		grid: '#eaeef2', axis: '#57606a', marker: '#9a6700' };

	/* A round step that cuts 0..MAX into about COUNT parts. */
	function niceStep(max, count) {
		if (!(max > 0))
			return 1;
		var raw = max / count, mag = Math.pow(10, Math.floor(Math.log10(raw))), norm = raw / mag;
		return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
	}

	/* A time tick T, written with as many digits as STEP needs to tell
	 * ticks apart: "0 ms", "0.5 ms", "1.25 s". */
	function tickLabel(t, step) {
		var unit = step < 1e-3 ? ['\u00b5s', 1e6] : step < 1 ? ['ms', 1e3] : ['s', 1];
		var v = t * unit[1], st = step * unit[1];
		var digits = Math.max(0, Math.min(6, -Math.floor(Math.log10(st) + 1e-9)));
		/* steps of 2.5 and the like need one more */
		if (Math.abs(st * Math.pow(10, digits) - Math.round(st * Math.pow(10, digits))) > 1e-6)
			digits++;
		return v.toFixed(digits) + ' ' + unit[0];
	}

	/* A rate in short: "950", "12k", "3.5M" (per second) */
	function shortCount(n) {
		var units = ['', 'k', 'M', 'G', 'T'], u = 0;
		while (n >= 1000 && u < units.length - 1) {
			n /= 1000;
			u++;
		}
		return (u ? n.toFixed(n < 10 ? 1 : 0).replace(/\.0$/, '') : Math.round(n)) + units[u];
	}

	function Chart(container) {
		var self = this;
		this.canvas = M.el('canvas', { class: 'chart-canvas', role: 'img', 'aria-label': 'memory over time' });
		this.tip = M.el('div', { class: 'tip', hidden: true });
		this.wrap = M.el('div', { class: 'chart-wrap' }, this.canvas, this.tip);
		var key = function (cls, text) {
			return M.el('span', { class: 'key' }, M.el('span', { class: 'swatch ' + cls }), text);
		};
		this.resolution = M.el('span', { class: 'chart-resolution' });
		this.reset = M.el('button', { type: 'button', class: 'btn chart-reset', disabled: true,
			text: 'Whole run', onclick: function () { self.zoom(null); } });
		/* The kernel's view (record's samples): resident and mapped memory
		 * beside the heap, on the heap's scale, which they dwarf; so a view
		 * of its own. */
		this.mode = 'heap';
		this.modeButton = M.el('button', { type: 'button', class: 'btn chart-mode', hidden: true,
			text: 'Process memory', onclick: function () {
				self.mode = self.mode === 'heap' ? 'process' : 'heap';
				self.modeButton.textContent = self.mode === 'heap' ? 'Process memory' : 'Heap and rates';
				self.draw();
			} });
		container.appendChild(M.el('div', { class: 'chart' },
			M.el('div', { class: 'legend' },
				key('heap', 'Heap in use (highest in each interval)'),
				this.keyRss = key('rss', 'Resident (RSS, sampled)'),
				this.keyAnon = key('anon', 'of which anonymous (heap pages, stacks, mappings)'),
				this.keyMapped = key('mapped', 'Mapped by the traced calls (mmap, brk, big blocks)'),
				this.keyLeak = key('leak', 'Leaked (allocated by then, never freed)'),
				this.keyRate = key('rate', 'Allocations per second (right axis)'),
				this.keyTemp = key('temp', 'of which temporary (freed by the next call)'),
				this.keyFrees = key('frees', 'Frees per second (right axis)')),
			this.wrap,
			M.el('div', { class: 'chart-foot' }, this.resolution, this.modeButton, this.reset)));
		this.canvas.addEventListener('mousemove', function (ev) { self.onMove(ev); });
		this.canvas.addEventListener('mouseleave', function () {
			self.hoverAt = -1;
			self.tip.hidden = true;
			self.draw();
		});
		this.canvas.addEventListener('mousedown', function (ev) { self.brushStart(ev); });
		window.addEventListener('mouseup', function (ev) { self.brushEnd(ev); });
		M.onWidthChange(this.wrap, function () { self.draw(); });
		this.hoverAt = -1;
	}

	Chart.prototype.setProcess = function (proc) {
		this.proc = proc;
		this.hoverAt = -1;
		this.range = null;
		this.reset.disabled = true;
		var tl = proc.timeline;
		/* the clock's steps: a coarse clock puts many events at one time */
		var coarse = tl.time_step_s && tl.time_step_s > tl.bucket_s;
		this.resolution.textContent = 'Resolution: one interval is ' + M.fmt.seconds(tl.bucket_s) +
			' (' + M.fmt.count(tl.heap_bytes.length) + ' over the run)' +
			(tl.time_step_s ? '; event times advance in steps of ' + M.fmt.span(tl.time_step_s) +
				' or more' + (coarse ? ' (the clock that stamped them is coarser than an interval: ' +
				'events bunch up; MEMTRACE_PRECISE_TIMESTAMPS=1 when recording gives finer times)' : '') : '') +
			'.  Drag across the chart to select a time range.';
		this.resolution.classList.toggle('coarse', !!coarse);
		/* after a leak scan, "leaked" names the lost blocks alone: this line
		 * counts every block not freed */
		this.keyLeak.lastChild.textContent = proc.leak_kinds ?
			'Never freed (leaked or still held), allocated by then' : 'Leaked (allocated by then, never freed)';
		this.draw();
	};

	/* Shows intervals [R[0], R[1]) only, or all of them (R null). */
	Chart.prototype.zoom = function (r) {
		this.range = r;
		this.reset.disabled = !r;
		this.draw();
		if (!r && this.onBrush && this.brushed)
			this.onBrush(null);
		this.brushed = !!r;
	};

	Chart.prototype.bucketAt = function (ev) {
		var s = this.s, r = this.canvas.getBoundingClientRect();
		var x = Math.min(Math.max(ev.clientX - r.left, s.left), s.right);
		return s.first + (x - s.left) / s.w * s.n;
	};

	Chart.prototype.brushStart = function (ev) {
		if (!this.s || !this.s.n || ev.button !== 0)
			return;
		this.drag = { from: this.bucketAt(ev), to: null };
		ev.preventDefault();
	};

	Chart.prototype.brushEnd = function (ev) {
		var d = this.drag;
		this.drag = null;
		if (!d || !this.s)
			return;
		var a = d.from, b = this.bucketAt(ev);
		if (Math.abs(b - a) < 0.5)
			return; /* a click, not a drag */
		var lo = Math.max(0, Math.floor(Math.min(a, b))), hi = Math.min(this.s.total, Math.ceil(Math.max(a, b)));
		var bs = this.proc.timeline.bucket_s;
		this.zoom([lo, hi]);
		if (this.onBrush)
			this.onBrush([lo * bs, hi * bs]);
	};

	/* The scales of the intervals shown (this.range, or all), with room
	 * for the widest label of each axis (measured with CTX). */
	Chart.prototype.scales = function (width, ctx) {
		var tl = this.proc.timeline, total = tl.heap_bytes.length;
		var first = this.range ? this.range[0] : 0, n = this.range ? this.range[1] - this.range[0] : total;
		var top = 0, rate = 0, proc = this.mode === 'process';
		for (var i = first; i < first + n; i++) {
			top = Math.max(top, tl.heap_bytes[i], proc ? 0 : tl.leaked_bytes[i],
				proc && tl.rss_bytes ? tl.rss_bytes[i] : 0, proc && tl.mapped_bytes ? tl.mapped_bytes[i] : 0);
			rate = Math.max(rate, tl.allocations[i] / tl.bucket_s, (tl.frees ? tl.frees[i] : 0) / tl.bucket_s);
		}
		var yStep = niceStep(top, 4), rStep = niceStep(rate, 4);
		var yMax = Math.max(yStep, Math.ceil(top / yStep) * yStep);
		var rMax = Math.max(rStep, Math.ceil(rate / rStep) * rStep);
		var lw = 0, rw = 0, v;
		for (v = 0; v <= yMax + 1e-9; v += yStep)
			lw = Math.max(lw, ctx.measureText(M.fmt.bytes(v)).width);
		for (v = 0; v <= rMax + 1e-9; v += rStep)
			rw = Math.max(rw, ctx.measureText(shortCount(v) + '/s').width);
		var s = {
			n: n, first: first, total: total,
			left: Math.max(PAD.left, Math.ceil(lw) + GAP + 6),
			right: width - Math.max(PAD.right, Math.ceil(rw) + GAP + 6),
			top: PAD.top, bottom: HEIGHT - PAD.bottom,
			yStep: yStep, yMax: yMax, rStep: rStep, rMax: rMax,
			t0: first * tl.bucket_s, span: n * tl.bucket_s,
		};
		s.w = s.right - s.left;
		s.h = s.bottom - s.top;
		/* I: an interval of the whole run */
		s.x = function (i) { return s.left + (i - first) / n * s.w; };
		s.xt = function (t) { return s.left + Math.min(Math.max((t - s.t0) / s.span, 0), 1) * s.w; };
		s.y = function (v) { return s.bottom - v / s.yMax * s.h; };
		s.yr = function (v) { return s.bottom - v / s.rMax * s.h; };
		return s;
	};

	Chart.prototype.draw = function () {
		if (!this.proc)
			return;
		var width = Math.max(this.wrap.clientWidth, 300);
		var ctx = M.fitCanvas(this.canvas, width, HEIGHT);
		ctx.font = FONT;
		var tl = this.proc.timeline, s = this.scales(width, ctx);
		this.s = s;
		/* recordings made with --rss-interval 0 have no samples, and
		 * those made with --no-mmap no mapping calls */
		if (!tl.rss_bytes && !tl.mapped_bytes)
			this.mode = 'heap';
		var proc = this.mode === 'process';
		this.modeButton.hidden = !tl.rss_bytes && !tl.mapped_bytes;
		/* (.key sets display: hidden alone would not hide it) */
		var show = function (k, on) { k.style.display = on ? '' : 'none'; };
		show(this.keyRss, proc && !!tl.rss_bytes);
		show(this.keyMapped, proc && !!tl.mapped_bytes);
		show(this.keyAnon, proc && !!tl.rss_anon_bytes);
		[this.keyLeak, this.keyRate, this.keyTemp, this.keyFrees].forEach(function (k) { show(k, !proc); });
		ctx.clearRect(0, 0, width, HEIGHT);
		this.axes(ctx, s);
		if (!s.n)
			return;
		var i;
		/* allocations and frees per second: the left and right half of each interval */
		var bars = proc ? [] : [[tl.allocations, C.rate, 0], [tl.temporary, C.temp, 0], [tl.frees, C.frees, 0.5]];
		bars.forEach(function (b) {
			if (!b[0])
				return;
			ctx.fillStyle = b[1];
			for (var k = s.first; k < s.first + s.n; k++) {
				if (b[0][k]) {
					var y = s.yr(b[0][k] / tl.bucket_s), x0 = s.x(k + b[2]);
					ctx.fillRect(x0, y, Math.max(s.x(k + b[2] + 0.5) - x0 - 0.25, 1), s.bottom - y);
				}
			}
		});
		this.steps(ctx, s, tl.heap_bytes, C.heap, C.heapFill);
		if (!proc)
			this.steps(ctx, s, tl.leaked_bytes, C.leak, null);
		/* what the kernel says beside the heap: the gap between the heap
		 * and resident memory is what the allocator (and the rest of the
		 * process: stacks, libraries' data) holds that the heap does not */
		if (proc && tl.rss_anon_bytes)
			this.steps(ctx, s, tl.rss_anon_bytes, C.anon, null);
		if (proc && tl.rss_bytes)
			this.steps(ctx, s, tl.rss_bytes, C.rss, null);
		if (proc && tl.mapped_bytes)
			this.steps(ctx, s, tl.mapped_bytes, C.mapped, null);
		this.marks(ctx, s);
		if (this.hoverAt >= 0) {
			var hx = s.x(this.hoverAt + 0.5);
			ctx.strokeStyle = 'rgba(31,35,40,0.5)';
			ctx.lineWidth = 1;
			ctx.beginPath();
			ctx.moveTo(hx, s.top);
			ctx.lineTo(hx, s.bottom);
			ctx.stroke();
		}
	};

	/* Writes LABEL at X, Y as CTX is aligned, and keeps its box in
	 * this.labels[KIND] (what a test reads back: none may be cut). */
	Chart.prototype.label = function (ctx, kind, label, x, y) {
		ctx.fillText(label, x, y);
		var w = ctx.measureText(label).width;
		var x0 = ctx.textAlign === 'right' ? x - w : ctx.textAlign === 'center' ? x - w / 2 : x;
		this.labels[kind].push({ text: label, x0: x0, x1: x0 + w });
	};

	Chart.prototype.axes = function (ctx, s) {
		this.labels = { left: [], right: [], time: [], width: parseFloat(this.canvas.style.width) };
		ctx.lineWidth = 1;
		ctx.textBaseline = 'middle';
		for (var v = 0; v <= s.yMax + 1e-9; v += s.yStep) {
			var y = Math.round(s.y(v)) + 0.5;
			ctx.strokeStyle = C.grid;
			ctx.beginPath();
			ctx.moveTo(s.left, y);
			ctx.lineTo(s.right, y);
			ctx.stroke();
			ctx.fillStyle = C.axis;
			ctx.textAlign = 'right';
			this.label(ctx, 'left', M.fmt.bytes(v), s.left - GAP, y);
		}
		ctx.textAlign = 'left';
		for (var r = 0; this.mode !== 'process' && r <= s.rMax + 1e-9; r += s.rStep)
			this.label(ctx, 'right', shortCount(r) + '/s', s.right + GAP, s.yr(r));
		/* ticks on round times, as many as fit without their labels touching */
		var count = Math.max(2, Math.floor(s.w / 110)), tStep = niceStep(s.span, count), t;
		for (var tries = 0; tries < 4; tries++) {
			var widest = 0;
			for (t = Math.ceil(s.t0 / tStep - 1e-9) * tStep; t <= s.t0 + s.span + 1e-12; t += tStep)
				widest = Math.max(widest, ctx.measureText(tickLabel(t, tStep)).width);
			if ((widest + 16) * s.span / tStep <= s.w)
				break;
			count = Math.max(1, Math.floor(count / 2));
			tStep = niceStep(s.span, count);
		}
		ctx.textBaseline = 'top';
		for (t = Math.ceil(s.t0 / tStep - 1e-9) * tStep; t <= s.t0 + s.span + 1e-12; t += tStep) {
			var x = Math.round(s.xt(t)) + 0.5, label = tickLabel(t, tStep), lw = ctx.measureText(label).width;
			ctx.strokeStyle = C.grid;
			ctx.beginPath();
			ctx.moveTo(x, s.bottom);
			ctx.lineTo(x, s.bottom + 4);
			ctx.stroke();
			/* the first and last labels stay inside the canvas */
			ctx.textAlign = x - lw / 2 < 0 ? 'left' : x + lw / 2 > this.labels.width ? 'right' : 'center';
			this.label(ctx, 'time', label, x, s.bottom + GAP);
		}
		ctx.strokeStyle = '#8c959f';
		ctx.beginPath();
		ctx.moveTo(s.left, s.bottom + 0.5);
		ctx.lineTo(s.right, s.bottom + 0.5);
		ctx.stroke();
	};

	/* VALUES as a step line (a bucket's value across its width), filled
	 * down to the axis when FILL is given. */
	Chart.prototype.steps = function (ctx, s, values, stroke, fill) {
		var a = s.first, z = s.first + s.n;
		ctx.beginPath();
		ctx.moveTo(s.x(a), s.y(values[a]));
		for (var i = a; i < z; i++) {
			ctx.lineTo(s.x(i), s.y(values[i]));
			ctx.lineTo(s.x(i + 1), s.y(values[i]));
		}
		if (fill) {
			ctx.lineTo(s.x(z), s.bottom);
			ctx.lineTo(s.x(a), s.bottom);
			ctx.closePath();
			ctx.fillStyle = fill;
			ctx.fill();
			ctx.beginPath();
			ctx.moveTo(s.x(a), s.y(values[a]));
			for (var j = a; j < z; j++) {
				ctx.lineTo(s.x(j), s.y(values[j]));
				ctx.lineTo(s.x(j + 1), s.y(values[j]));
			}
		}
		ctx.strokeStyle = stroke;
		ctx.lineWidth = 1.5;
		ctx.lineJoin = 'round';
		ctx.stroke();
	};

	/* The peak, and the markers the program set (memtrace's marker API). */
	Chart.prototype.marks = function (ctx, s) {
		var t = this.proc.totals;
		(this.proc.markers || []).forEach(function (m) {
			if (m.time_s < s.t0 || m.time_s > s.t0 + s.span)
				return;
			var x = Math.round(s.xt(m.time_s)) + 0.5;
			ctx.strokeStyle = C.marker;
			ctx.setLineDash([3, 3]);
			ctx.beginPath();
			ctx.moveTo(x, s.top);
			ctx.lineTo(x, s.bottom);
			ctx.stroke();
			ctx.setLineDash([]);
			ctx.fillStyle = C.marker;
			ctx.textAlign = 'left';
			ctx.textBaseline = 'top';
			ctx.fillText(m.text || String(m.value), x + 3, s.top);
		});
		if (!t.peak_bytes || t.peak_time_s < s.t0 || t.peak_time_s > s.t0 + s.span)
			return;
		var px = s.xt(t.peak_time_s), py = s.y(t.peak_bytes);
		ctx.fillStyle = C.heap;
		ctx.beginPath();
		ctx.arc(px, py, 4, 0, 2 * Math.PI);
		ctx.fill();
		var label = 'peak ' + M.fmt.bytes(t.peak_bytes) + ' at ' + M.fmt.seconds(t.peak_time_s);
		ctx.font = 'bold ' + FONT;
		var w = ctx.measureText(label).width;
		ctx.textBaseline = 'bottom';
		ctx.textAlign = px + 8 + w > s.right ? 'right' : 'left';
		ctx.fillStyle = '#1f2328';
		ctx.fillText(label, ctx.textAlign === 'right' ? px - 8 : px + 8, Math.max(py - 4, s.top + 12));
		ctx.font = FONT;
	};

	Chart.prototype.onMove = function (ev) {
		var s = this.s, tl = this.proc && this.proc.timeline;
		if (!s || !s.n)
			return;
		var r = this.canvas.getBoundingClientRect(), x = ev.clientX - r.left;
		var i = s.first + Math.floor((x - s.left) / s.w * s.n);
		if (this.drag) {
			this.drawBrush(this.drag.from, this.bucketAt(ev));
			return;
		}
		if (i < s.first || i >= s.first + s.n) {
			this.hoverAt = -1;
			this.tip.hidden = true;
			this.draw();
			return;
		}
		this.hoverAt = i;
		this.draw();
		var row = function (k, v) {
			return M.el('tr', null, M.el('th', { text: k }), M.el('td', { text: v }));
		};
		this.tip.replaceChildren(
			M.el('div', { class: 'tip-title', text: M.fmt.seconds(i * tl.bucket_s) + ' \u2013 ' +
				M.fmt.seconds((i + 1) * tl.bucket_s) }),
			M.el('table', null,
				row('Heap in use (highest)', M.fmt.value(tl.heap_bytes[i], 'bytes')),
				row(this.proc.leak_kinds ? 'Never freed, by then' : 'Leaked by then',
					M.fmt.value(tl.leaked_bytes[i], 'bytes')),
				row('Resident (RSS)', tl.rss_bytes ? M.fmt.value(tl.rss_bytes[i], 'bytes') : '\u2013'),
				row('of which anonymous', tl.rss_anon_bytes ? M.fmt.value(tl.rss_anon_bytes[i], 'bytes') : '\u2013'),
				row('Mapped (traced calls)', tl.mapped_bytes ? M.fmt.value(tl.mapped_bytes[i], 'bytes') : '\u2013'),
				row('Allocations', M.fmt.count(tl.allocations[i]) + ' (' +
					M.fmt.count(tl.allocations[i] / tl.bucket_s) + '/s)'),
				row('Temporary', tl.temporary ? M.fmt.count(tl.temporary[i]) : '\u2013'),
				row('Frees', tl.frees ? M.fmt.count(tl.frees[i]) + ' (' +
					M.fmt.count(tl.frees[i] / tl.bucket_s) + '/s)' : '\u2013')));
		this.tip.hidden = false;
		var tx = x + 14;
		if (tx + this.tip.offsetWidth > r.width)
			tx = x - this.tip.offsetWidth - 14;
		this.tip.style.left = Math.max(0, tx) + 'px';
		this.tip.style.top = (ev.clientY - r.top + 12) + 'px';
	};

	/* The range being dragged, from interval A to B, over the chart. */
	Chart.prototype.drawBrush = function (a, b) {
		this.draw();
		var s = this.s, ctx = this.canvas.getContext('2d');
		var r = window.devicePixelRatio || 1;
		ctx.setTransform(r, 0, 0, r, 0, 0);
		ctx.fillStyle = 'rgba(9,105,218,0.15)';
		var x0 = s.x(Math.min(a, b)), x1 = s.x(Math.max(a, b));
		ctx.fillRect(x0, s.top, x1 - x0, s.bottom - s.top);
	};

	M.Chart = Chart;
	M.tickLabel = tickLabel;
})(Memtrace);
