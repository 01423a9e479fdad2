/*
 * histo.js - a process's allocations by size and by lifetime on the report
 * page, as bars: the "sizes" and "lifetimes" of the page's data, which are
 * `memtrace report --sizes` (analyse/histo.h) over the same allocations.
 */
(function (M) {
	'use strict';

	function sizeLabel(b) {
		return b.max_size === null ? 'more than ' + M.fmt.count(b.min_size - 1) + ' B' :
			b.min_size === b.max_size ? M.fmt.count(b.max_size) + ' B' :
			M.fmt.count(b.min_size) + ' to ' + M.fmt.count(b.max_size) + ' B';
	}

	/* the bounds are round: 0.001 -> "1 ms", 10 -> "10 s" */
	function round(s) {
		return s < 1 ? +(s * 1000).toPrecision(6) + ' ms' : +s.toPrecision(6) + ' s';
	}

	function lifeLabel(b) {
		if (!b.min_s)
			return 'under ' + round(b.max_s);
		if (b.max_s === null)
			return round(b.min_s) + ' or more';
		return round(b.min_s) + ' to ' + round(b.max_s);
	}

	/* One table of bars: ROWS of [label, allocations, bytes, key]. */
	function bars(title, rows) {
		var max = Math.max.apply(null, rows.map(function (r) { return r[1]; }).concat([1]));
		return M.el('div', { class: 'histo' }, M.el('h3', { text: title }),
			M.el('table', { class: 'histo-table' },
				M.el('thead', null, M.el('tr', null, M.el('th', { scope: 'col', text: title === 'Sizes' ? 'Size' :
					'Lifetime' }), M.el('th', { class: 'num', scope: 'col', text: 'Allocations' }),
				M.el('th', { class: 'num', scope: 'col', text: 'Bytes' }), M.el('th', { scope: 'col' }))),
				M.el('tbody', null, rows.map(function (r) {
					var bar = M.el('div', { class: 'histo-bar' });
					bar.style.width = (100 * r[1] / max).toFixed(1) + '%';
					return M.el('tr', { 'data-key': r[3] }, M.el('td', { text: r[0] }),
						M.el('td', { class: 'num', 'data-v': String(r[1]), text: M.fmt.count(r[1]) }),
						M.el('td', { class: 'num', title: M.fmt.value(r[2], 'bytes'), text: M.fmt.bytes(r[2]) }),
						M.el('td', { class: 'histo-cell' }, bar));
				}))));
	}

	function Histograms(container) {
		this.container = container;
	}

	Histograms.prototype.setProcess = function (p) {
		if (!p.sizes) {
			this.container.replaceChildren(M.el('p', { class: 'hint', text: 'Not in this page\'s data.' }));
			return;
		}
		var sizes = p.sizes.map(function (b) { return [sizeLabel(b), b.allocations, b.bytes, 'size-' + b.max_size]; });
		var life = p.lifetimes.map(function (b) {
			return [lifeLabel(b), b.allocations, b.bytes, 'life-' + b.max_s];
		});
		life.push(['never freed', p.never_freed.allocations, p.never_freed.bytes, 'never']);
		this.container.replaceChildren(M.el('div', { class: 'histo-pair' }, bars('Sizes', sizes),
			bars('Lifetimes', life)));
	};

	M.Histograms = Histograms;
})(Memtrace);
