/*
 * svg-flamegraph.js - the script inside `memtrace export --format svg`:
 * zoom on click, the details line on hover, regex search with the share it
 * matches.  Each frame is a <g class="f"> holding a <title> (name, figure,
 * location: one line each), a <rect> and a <text>; data-o and data-v are
 * its offset and width in the weight's units and data-d its depth, so that
 * zooming computes exact positions rather than scaling rounded pixels.
 */
(function () {
	'use strict';
	var svg = document.documentElement;
	var area = +svg.getAttribute('data-width');
	var pad = +svg.getAttribute('data-pad');
	var total = +svg.getAttribute('data-total');
	var unit = svg.getAttribute('data-unit');
	var details = document.getElementById('details');
	var matched = document.getElementById('matched');
	var unzoomBtn = document.getElementById('unzoom');
	var searchBtn = document.getElementById('search');
	var frames = [];
	var charWidth = 7;
	var zoomed = null;
	var searching = false;

	function fmt(n) {
		return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	}

	function init() {
		var gs = document.querySelectorAll('g.f');
		for (var i = 0; i < gs.length; i++) {
			var g = gs[i];
			var lines = g.querySelector('title').textContent.split('\n');
			frames.push({
				g: g, rect: g.querySelector('rect'), text: g.querySelector('text'),
				o: +g.getAttribute('data-o'), v: +g.getAttribute('data-v'),
				d: +g.getAttribute('data-d'),
				name: lines[0], figure: lines[1] || '', where: lines[2] || ''
			});
			g.addEventListener('click', onClick.bind(null, frames[i]));
			g.addEventListener('mouseover', onOver.bind(null, frames[i]));
			g.addEventListener('mouseout', onOut);
		}
		measureFont();
		unzoomBtn.addEventListener('click', unzoom);
		searchBtn.addEventListener('click', function () {
			if (searching)
				clearSearch();
			else
				askSearch();
		});
		window.addEventListener('keydown', function (ev) {
			if ((ev.ctrlKey || ev.metaKey) && ev.key === 'f') {
				ev.preventDefault();
				askSearch();
			} else if (ev.key === 'Escape') {
				clearSearch();
				unzoom();
			}
		});
		layout();
	}

	function measureFont() {
		if (!frames.length || !frames[0].text.getComputedTextLength)
			return;
		var t = frames[0].text, old = t.textContent;
		var sample = 'abcdefghijklmnopqrstuvwxyz_ABCDEFGH::0123456789()';
		t.textContent = sample;
		var w = t.getComputedTextLength();
		t.textContent = old;
		if (w > 0)
			charWidth = w / sample.length;
	}

	function label(f, w) {
		var fit = Math.floor((w - 6) / charWidth);
		if (f.name.length <= fit)
			return f.name;
		return fit >= 5 ? f.name.slice(0, fit - 2) + '..' : '';
	}

	/* Places every frame for the current zoom: the zoomed frame and what it
	 * holds span the whole width, its ancestors too (faded), the rest hides. */
	function layout() {
		var zo = zoomed ? zoomed.o : 0, zv = zoomed ? zoomed.v : total, zd = zoomed ? zoomed.d : 0;
		for (var i = 0; i < frames.length; i++) {
			var f = frames[i], x, w;
			var inside = f.d >= zd && f.o >= zo && f.o + f.v <= zo + zv;
			var above = zoomed && f.d < zd && f.o <= zo && f.o + f.v >= zo + zv;
			if (inside) {
				x = pad + (f.o - zo) / zv * area;
				w = f.v / zv * area;
			} else if (above) {
				x = pad;
				w = area;
			}
			f.g.classList.toggle('parent', !!above);
			f.g.classList.toggle('hide', !(inside || above));
			if (!(inside || above))
				continue;
			f.rect.setAttribute('x', x.toFixed(2));
			f.rect.setAttribute('width', w.toFixed(2));
			f.text.setAttribute('x', (x + 3).toFixed(2));
			f.text.textContent = label(f, w);
		}
		unzoomBtn.classList.toggle('hide', !zoomed);
	}

	function onClick(f) {
		zoomed = f.d === 0 ? null : f;
		layout();
	}

	function unzoom() {
		zoomed = null;
		layout();
	}

	function onOver(f) {
		details.textContent = f.name + '  \u2014  ' + f.figure + (f.where ? '  \u2014  ' + f.where : '');
	}

	function onOut() {
		details.textContent = ' ';
	}

	function askSearch() {
		var re = window.prompt('Search for frames (a regular expression)', '');
		if (re)
			search(re);
	}

	/* Highlights the frames whose name RE matches and shows their share,
	 * counting a matched frame inside another matched one once. */
	function search(re) {
		var rx;
		try {
			rx = new RegExp(re);
		} catch (e) {
			matched.textContent = 'Invalid regular expression';
			return;
		}
		var hits = [];
		for (var i = 0; i < frames.length; i++) {
			var m = rx.test(frames[i].name);
			frames[i].g.classList.toggle('match', m);
			if (m)
				hits.push(frames[i]);
		}
		hits.sort(function (a, b) { return a.o - b.o || a.d - b.d; });
		var sum = 0, end = -1;
		for (var j = 0; j < hits.length; j++) {
			if (hits[j].o >= end) {
				sum += hits[j].v;
				end = hits[j].o + hits[j].v;
			}
		}
		searching = true;
		searchBtn.textContent = 'Reset Search';
		matched.textContent = 'Matched: ' + (total ? (100 * sum / total).toFixed(2) : '0.00') + '% (' +
			fmt(sum) + ' ' + unit + ')';
	}

	function clearSearch() {
		for (var i = 0; i < frames.length; i++)
			frames[i].g.classList.remove('match');
		searching = false;
		searchBtn.textContent = 'Search';
		matched.textContent = ' ';
	}

	init();
	window.memtraceFlamegraph = { search: search, clearSearch: clearSearch, unzoom: unzoom };
})();
