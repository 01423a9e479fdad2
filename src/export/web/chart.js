/*
 * chart.js - memory over time on a canvas, from a process's timeline (a
 * fixed number of equal time buckets, see export_html.c): the heap in use
 * (the highest it was in each bucket), the bytes leaked (blocks never freed,
 * counted from the moment they were allocated) and the allocations per
 * second, with the peak and the recording's markers.  Hovering shows the
 * figures of a bucket.
 */
(function (M) {
	'use strict';
	var HEIGHT = 260;
	var PAD = { left: 70, right: 78, top: 18, bottom: 30 };
	var FONT = '11px system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif';
	var C = { heap: '#0969da', heapFill: 'rgba(9,105,218,0.14)', leak: '#cf222e', rate: 'rgba(130,80,223,0.28)', frees: 'rgba(26,127,55,0.30)',
		grid: '#eaeef2', axis: '#57606a', marker: '#9a6700' };

	/* A round step that cuts 0..MAX into about COUNT parts. */
	function niceStep(max, count) {
		if (!(max > 0))
			return 1;
		var raw = max / count, mag = Math.pow(10, Math.floor(Math.log10(raw))), norm = raw / mag;
		return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
	}

	function Chart(container) {
		var self = this;
		this.canvas = M.el('canvas', { class: 'chart-canvas', role: 'img', 'aria-label': 'memory over time' });
		this.tip = M.el('div', { class: 'tip', hidden: true });
		this.wrap = M.el('div', { class: 'chart-wrap' }, this.canvas, this.tip);
		var key = function (cls, text) {
			return M.el('span', { class: 'key' }, M.el('span', { class: 'swatch ' + cls }), text);
		};
		container.appendChild(M.el('div', { class: 'chart' },
			M.el('div', { class: 'legend' },
				key('heap', 'Heap in use (highest in each interval)'),
				key('leak', 'Leaked (allocated by then, never freed)'),
				key('rate', 'Allocations per second (right axis)'),
				key('frees', 'Frees per second (right axis)')),
			this.wrap));
		this.canvas.addEventListener('mousemove', function (ev) { self.onMove(ev); });
		this.canvas.addEventListener('mouseleave', function () {
			self.hoverAt = -1;
			self.tip.hidden = true;
			self.draw();
		});
		M.onWidthChange(this.wrap, function () { self.draw(); });
		this.hoverAt = -1;
	}

	Chart.prototype.setProcess = function (proc) {
		this.proc = proc;
		this.hoverAt = -1;
		this.draw();
	};

	Chart.prototype.scales = function (width) {
		var tl = this.proc.timeline, n = tl.heap_bytes.length;
		var top = 0, rate = 0;
		for (var i = 0; i < n; i++) {
			top = Math.max(top, tl.heap_bytes[i], tl.leaked_bytes[i]);
			rate = Math.max(rate, tl.allocations[i] / tl.bucket_s, (tl.frees ? tl.frees[i] : 0) / tl.bucket_s);
		}
		var yStep = niceStep(top, 4), rStep = niceStep(rate, 4);
		var s = {
			n: n, left: PAD.left, right: width - PAD.right, top: PAD.top, bottom: HEIGHT - PAD.bottom,
			yStep: yStep, yMax: Math.max(yStep, Math.ceil(top / yStep) * yStep),
			rStep: rStep, rMax: Math.max(rStep, Math.ceil(rate / rStep) * rStep),
			span: n * tl.bucket_s,
		};
		s.w = s.right - s.left;
		s.h = s.bottom - s.top;
		s.x = function (i) { return s.left + i / n * s.w; };
		s.xt = function (t) { return s.left + Math.min(Math.max(t / s.span, 0), 1) * s.w; };
		s.y = function (v) { return s.bottom - v / s.yMax * s.h; };
		s.yr = function (v) { return s.bottom - v / s.rMax * s.h; };
		return s;
	};

	Chart.prototype.draw = function () {
		if (!this.proc)
			return;
		var width = Math.max(this.wrap.clientWidth, 300);
		var ctx = M.fitCanvas(this.canvas, width, HEIGHT);
		var tl = this.proc.timeline, s = this.scales(width);
		this.s = s;
		ctx.clearRect(0, 0, width, HEIGHT);
		ctx.font = FONT;
		this.axes(ctx, s);
		if (!s.n)
			return;
		var i;
		/* allocations and frees per second: the left and right half of each interval */
		var bars = [[tl.allocations, C.rate, 0], [tl.frees, C.frees, 0.5]];
		bars.forEach(function (b) {
			if (!b[0])
				return;
			ctx.fillStyle = b[1];
			for (var k = 0; k < s.n; k++) {
				if (b[0][k]) {
					var y = s.yr(b[0][k] / tl.bucket_s), x0 = s.x(k + b[2]);
					ctx.fillRect(x0, y, Math.max(s.x(k + b[2] + 0.5) - x0 - 0.25, 1), s.bottom - y);
				}
			}
		});
		this.steps(ctx, s, tl.heap_bytes, C.heap, C.heapFill);
		this.steps(ctx, s, tl.leaked_bytes, C.leak, null);
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

	Chart.prototype.axes = function (ctx, s) {
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
			ctx.fillText(M.fmt.bytes(v), s.left - 8, y);
		}
		ctx.textAlign = 'left';
		for (var r = 0; r <= s.rMax + 1e-9; r += s.rStep)
			ctx.fillText(M.fmt.count(r) + '/s', s.right + 8, s.yr(r));
		var tStep = niceStep(s.span, Math.max(2, Math.floor(s.w / 110)));
		ctx.textAlign = 'center';
		ctx.textBaseline = 'top';
		for (var t = 0; t <= s.span + 1e-12; t += tStep) {
			var x = Math.round(s.xt(t)) + 0.5;
			ctx.strokeStyle = C.grid;
			ctx.beginPath();
			ctx.moveTo(x, s.bottom);
			ctx.lineTo(x, s.bottom + 4);
			ctx.stroke();
			ctx.fillText(M.fmt.seconds(t), x, s.bottom + 8);
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
		ctx.beginPath();
		ctx.moveTo(s.x(0), s.y(values[0]));
		for (var i = 0; i < s.n; i++) {
			ctx.lineTo(s.x(i), s.y(values[i]));
			ctx.lineTo(s.x(i + 1), s.y(values[i]));
		}
		if (fill) {
			ctx.lineTo(s.x(s.n), s.bottom);
			ctx.lineTo(s.x(0), s.bottom);
			ctx.closePath();
			ctx.fillStyle = fill;
			ctx.fill();
			ctx.beginPath();
			ctx.moveTo(s.x(0), s.y(values[0]));
			for (var j = 0; j < s.n; j++) {
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
		if (!t.peak_bytes)
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
		var i = Math.floor((x - s.left) / s.w * s.n);
		if (i < 0 || i >= s.n) {
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
				row('Leaked by then', M.fmt.value(tl.leaked_bytes[i], 'bytes')),
				row('Allocations', M.fmt.count(tl.allocations[i]) + ' (' +
					M.fmt.count(tl.allocations[i] / tl.bucket_s) + '/s)'),
				row('Frees', tl.frees ? M.fmt.count(tl.frees[i]) + ' (' +
					M.fmt.count(tl.frees[i] / tl.bucket_s) + '/s)' : '\u2013')));
		this.tip.hidden = false;
		var tx = x + 14;
		if (tx + this.tip.offsetWidth > r.width)
			tx = x - this.tip.offsetWidth - 14;
		this.tip.style.left = Math.max(0, tx) + 'px';
		this.tip.style.top = (ev.clientY - r.top + 12) + 'px';
	};

	M.Chart = Chart;
})(Memtrace);
