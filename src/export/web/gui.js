/*
 * gui.js - the web GUI of `memtrace server`, on the report page's scripts:
 * at "/" the recordings the server loaded (GET /list), at "/ui/ID" one
 * recording drawn by Memtrace.render from GET /data/ID/report, under a
 * filter form whose fields are the API's filter parameters.  Submitting it
 * fetches the report again with them, redraws everything, keeps them in the
 * page's own query (so that a reload or a shared link shows the same) and
 * in the export links (the form comes after the summary and the chart).
 * A filter the server refuses changes none of these:
 * the view, the page's URL and the downloads always show the same filter,
 * and the status says the new one was not applied.  A time range dragged
 * across the chart becomes the from and to filters, so that every view
 * (figures, flamegraph, call sites, functions, sizes, downloads) shows the
 * allocations made in it.  Under the chart, a slider picks a moment: every
 * view then shows what was live at that moment (memray's temporal view:
 * the allocations made before it and not freed by then; with a range
 * dragged, those made in the range and still live at its end).  The
 * thread selector of the page's bar (report.js) sets the thread filter the
 * same way: every view then shows what that thread allocated.  The query
 * console (console.js) goes under it.
 */
(function (M) {
	'use strict';

	/* [name, label, kind, hint]: kind is text, or the options of a select */
	var FIELDS = [
		['from', 'From', 'text', 'e.g. 1.5s, 200ms, 10%'],
		['to', 'To', 'text', 'e.g. 3s, 90%'],
		['thread', 'Thread', 'text', 'a tid (the selector above)'],
		['lifetime', 'Lifetime', ['all', 'only_leaked', 'only_temporary',
			'only_not_deallocated_in_current_range', 'only_deallocated_in_current_range',
			'only_whole_group_leaked']],
		['size_min', 'Size min', 'text', 'bytes'],
		['size_max', 'Size max', 'text', 'bytes'],
		['lifetime_min', 'Lifetime min', 'text', 'e.g. 10ms'],
		['lifetime_max', 'Lifetime max', 'text', 'e.g. 1s'],
		['function_regex', 'Function regex', 'text', 'a stack frame matches'],
		['negative_function_regex', 'Not function regex', 'text', 'no stack frame matches'],
		['source_regex', 'Source regex', 'text', 'a frame\'s file matches'],
		['negative_source_regex', 'Not source regex', 'text', 'no frame\'s file matches'],
		['group_allocations_min', 'Site allocations min', 'text', 'count'],
		['group_leaked_allocations_min', 'Site leaked min', 'text', 'count or %'],
		['where', 'SQL where', 'text', 'e.g. size > 4096 AND free_s IS NULL'],
	];

	/* the download buttons, [endpoint, label, hint]: the formats of the
	 * exports' table (src/export/formats.c), which the server puts into
	 * the page */
	function downloads() {
		var e = document.getElementById('memtrace-downloads');
		return e ? JSON.parse(e.textContent) : [];
	}

	function topbar(extra) {
		return M.el('header', { class: 'topbar' },
			M.el('a', { class: 'brand', href: '/', text: 'memtrace' }),
			M.el('span', { class: 'recording', text: 'server' }), extra);
	}

	/* ---- "/": the recordings ---- */

	/* What recording F leaked: after a leak scan, the blocks it found
	 * lost; else every block not freed. */
	function leakedCell(f) {
		var scanned = f.lost_bytes !== null && f.lost_bytes !== undefined;
		var v = scanned ? f.lost_bytes : f.leaked_bytes;
		return M.el('td', { class: 'num' + (v ? '' : ' zero'), 'data-key': 'leaked', text: M.fmt.bytes(v),
			title: scanned ? M.fmt.value(v, 'bytes') + ' definitely or indirectly lost (the leak scan); ' +
				M.fmt.value(f.leaked_bytes, 'bytes') + ' not freed in all' :
				M.fmt.value(v, 'bytes') + ' not freed by the end (no leak scan)' });
	}

	function listRow(f) {
		var href = '/ui/' + f.id;
		// a file the server is still loading: how far it got
		if (f.state === 'loading')
			return M.el('tr', { class: 'loading' },
				M.el('td', { class: 'num', text: String(f.id) }),
				M.el('td', { class: 'fn', text: 'loading ' + Math.floor(100 * (f.progress || 0)) + '%' }),
				M.el('td', { class: 'where', title: f.file, text: f.file }),
				M.el('td', { colspan: '5' }));
		// a file that did not load: its name and why, nothing to open
		if (f.error)
			return M.el('tr', { class: 'failed' },
				M.el('td', { class: 'num', text: String(f.id) }),
				M.el('td', { class: 'fn', text: f.error }),
				M.el('td', { class: 'where', title: f.file, text: f.file }),
				M.el('td', { colspan: '5' }));
		return M.el('tr', null,
			M.el('td', { class: 'num', text: String(f.id) }),
			M.el('td', { class: 'fn' },
				M.el('a', { class: 'name', href: href, text: M.fmt.basename(f.exe) || f.file }),
				M.el('span', { class: 'caller', text: (f.argv || []).join(' ') })),
			M.el('td', { class: 'where', title: f.file, text: f.file }),
			M.el('td', { class: 'num', text: M.fmt.seconds(f.duration_s) }),
			M.el('td', { class: 'num', text: M.fmt.count(f.allocations) }),
			M.el('td', { class: 'num', text: M.fmt.bytes(f.allocated_bytes) }),
			leakedCell(f),
			M.el('td', { class: 'num', text: (f.pids || []).length + '' }));
	}

	function showList(root, files) {
		var heads = ['#', 'Program', 'File', 'Duration', 'Allocations', 'Allocated', 'Leaked', 'Processes'];
		var body = M.el('div', { class: 'card-body' },
			M.el('div', { class: 'tbl-scroll' }, M.el('table', { class: 'sites recordings' },
				M.el('thead', null, M.el('tr', null, heads.map(function (h, i) {
					return M.el('th', { class: i === 1 || i === 2 ? null : 'num', scope: 'col', text: h });
				}))),
				M.el('tbody', null, files.map(listRow)))));
		root.replaceChildren(topbar(),
			M.el('main', null, M.el('section', { class: 'card' },
				M.el('div', { class: 'card-head' }, M.el('h2', { text: 'Recordings' }),
					M.el('p', { class: 'hint', text: 'Click one to see it.  The REST API: /list, ' +
						'/data/ID/summary, /allocation_groups, ... (memtrace-server(1)).' })),
				body)));
	}

	/* While a file loads, the list is asked for again, to show how far it
	 * got and then the file itself. */
	function listPage(root) {
		return fetchJSON('/list').then(function (files) {
			showList(root, files);
			if (files.some(function (f) { return f.state === 'loading'; }))
				setTimeout(function () { listPage(root); }, 500);
		}, function (e) {
			root.replaceChildren(topbar(), M.el('main', null,
				M.el('div', { class: 'note', text: 'Cannot load /list: ' + e.message })));
		});
	}

	/* ---- "/ui/ID": one recording ---- */

	function fetchJSON(url) {
		return fetch(url).catch(function () {
			// fetch itself failed: nobody answers (a stopped server)
			throw new Error('The server does not answer (has it stopped?): cannot load ' + url);
		}).then(function (res) {
			return res.json().catch(function () { return {}; }).then(function (body) {
				if (!res.ok)
					throw new Error(body.error || res.status + ' ' + res.statusText);
				return body;
			});
		});
	}

	function field(f, params) {
		var input;
		if (Array.isArray(f[2])) {
			input = M.el('select', { name: f[0] }, f[2].map(function (o) {
				return M.el('option', { value: o, text: o.replace(/_/g, ' ') });
			}));
			input.value = params.get(f[0]) || 'all';
		} else {
			input = M.el('input', { type: 'text', name: f[0], placeholder: f[3], spellcheck: 'false',
				value: params.get(f[0]) || '' });
		}
		return M.el('label', { class: 'gui-field' }, M.el('span', { text: f[1] }), input);
	}

	/* The filters of FORM as a query string: the fields that say something. */
	function query(form) {
		var q = new URLSearchParams();
		Array.prototype.forEach.call(form.elements, function (e) {
			if (!e.name || !e.value.trim() || (e.name === 'lifetime' && e.value === 'all'))
				return;
			q.set(e.name, e.value.trim());
		});
		return q.toString();
	}

	function Recording(root, id) {
		var self = this;
		this.root = root;
		this.id = id;
		var params = new URLSearchParams(location.search);
		this.status = M.el('span', { class: 'gui-status', role: 'status' });
		this.form = M.el('form', { class: 'gui-filters', onsubmit: function (ev) {
			ev.preventDefault();
			self.apply();
		} }, M.el('div', { class: 'gui-fields' }, FIELDS.map(function (f) { return field(f, params); })),
		M.el('div', { class: 'toolbar' },
			M.el('button', { type: 'submit', class: 'btn primary', text: 'Apply filters' }),
			M.el('button', { type: 'button', class: 'btn', text: 'Clear', onclick: function () {
				self.form.reset();
				Array.prototype.forEach.call(self.form.elements, function (e) {
					if (e.tagName === 'INPUT')
						e.value = '';
					else if (e.tagName === 'SELECT')
						e.value = 'all';
				});
				self.apply();
			} }), this.status));
		this.downloads = M.el('div', { class: 'gui-downloads' });
		this.panel = M.el('section', { class: 'card gui-panel' },
			M.el('div', { class: 'card-head' }, M.el('h2', { text: 'Filters' }),
				M.el('p', { class: 'hint', text: 'The API\'s allocation filters (memtrace-server(1)); ' +
					'empty fields do not filter.' })),
			M.el('div', { class: 'card-body' }, this.form, this.downloads));
		this.console = M.QueryConsole ? new M.QueryConsole(this) : null;
		this.allocations = M.AllocationList ? new M.AllocationList(this) : null;
		/* the bar's thread selector: one thread (tid), or '' for all */
		M.onThread = function (tid) {
			self.form.elements.thread.value = tid;
			self.apply();
		};
	}

	Recording.prototype.links = function (q) {
		var base = '/data/' + encodeURIComponent(this.id) + '/export/';
		var links = downloads().map(function (e) {
			return M.el('a', { class: 'btn', href: base + e[0] + (q ? '?' + q : ''), download: '',
				title: e[2], 'data-format': e[0], text: e[1] });
		});
		this.downloads.replaceChildren.apply(this.downloads,
			[M.el('span', { class: 'gui-dl-label', text: 'Download, filtered as above:' })].concat(links));
	};

	/* Fetches the report with the form's filters and draws it. */
	Recording.prototype.apply = function () {
		var self = this, q = query(this.form);
		var url = '/data/' + encodeURIComponent(this.id) + '/report' + (q ? '?' + q : '');
		this.status.textContent = 'Loading\u2026';
		this.status.className = 'gui-status';
		this.waitedOut = false;
		return fetchJSON(url).then(function (data) {
			var proc = M.report && M.report.proc && M.report.data.processes.indexOf(M.report.proc);
			var was = M.report;
			M.report = M.render(self.root, data);
			self.place();
			if (M.report && proc >= 0 && proc < data.processes.length &&
					M.report.data.processes.indexOf(M.report.proc) !== proc) {
				self.root.querySelector('.proc-select').value = String(proc);
				M.report.select(proc);
			}
			if (M.report && was)
				self.keep(was, M.report);
			self.shown = q;
			self.url();
			self.hookChart();
			if (self.allocations)
				self.allocations.refresh();
			var picker = self.root.querySelector('.proc-select');
			if (picker)
				picker.addEventListener('change', function () {
					/* a thread is one process's: another process shows all of its own */
					var tid = self.form.elements.thread.value.trim(), p = M.report.proc;
					if (tid && !(p.threads || []).some(function (t) { return String(t.tid) === tid; })) {
						self.form.elements.thread.value = '';
						self.apply();
						return;
					}
					self.url();
					if (self.allocations)
						self.allocations.refresh();
				});
			self.links(q);
			self.status.textContent = q ? 'Filtered.' : '';
			document.body.setAttribute('data-state', 'ready');
		}, function (e) {
			// the load took longer than a request may wait: watch() asks again
			self.waitedOut = /still loading/.test(e.message);
			self.status.textContent = e.message + (self.shown !== undefined ?
				' \u2014 not applied: the page still shows ' +
				(self.shown ? 'the filter ' + self.shown : 'every allocation') : '');
			self.status.className = 'gui-status bad';
			if (!self.root.querySelector('main'))
				self.place();
			document.body.setAttribute('data-state', 'error');
		});
	};

	/* What the user picked on the page WAS stays picked on its redraw R
	 * under a new filter: the flamegraph's weight, the call sites' order,
	 * the leak kind. */
	Recording.prototype.keep = function (was, r) {
		if (was.flame.chosen) {
			r.flame.chosen = true;
			r.flame.setWeight(was.flame.wi);
		}
		if (was.table.chosen) {
			r.table.chosen = true;
			r.table.key = was.table.key;
			r.table.desc = was.table.desc;
			r.table.render();
		}
		if (was.kind && r.proc.leak_kinds && was.kind !== r.kind)
			r.setKind(was.kind);
	};

	/* While the recording loads, the status says how far it got (its
	 * report waits for it).  While it is still being written (/list says
	 * it is growing), a new generation (the server loaded it again) draws
	 * it again with the same filters.  A finished recording is not asked
	 * about again. */
	Recording.prototype.watch = function () {
		var self = this, again = 0;
		fetchJSON('/list').then(function (files) {
			var f = self.id === 'last' ? files[files.length - 1] : files[+self.id];
			if (f && f.state === 'loading') {
				self.status.textContent = 'Loading the recording\u2026 ' +
					Math.floor(100 * (f.progress || 0)) + '%';
				self.status.className = 'gui-status';
				again = 500;
			} else if (f && f.state === 'ready') {
				if ((self.generation !== undefined && f.generation !== self.generation) ||
						self.waitedOut)
					self.apply();
				self.generation = f.generation;
				// a recording still being written: looked at again
				if (f.growing)
					again = 2000;
			}
		}, function () {}).then(function () {
			if (again)
				setTimeout(function () { self.watch(); }, again);
		});
	};

	/* The chart's brush sets from and to (seconds, as the API takes them)
	 * and applies them; "Whole run" clears them.  The new page's chart
	 * stays zoomed on the range. */
	Recording.prototype.hookChart = function () {
		var self = this, chart = M.report && M.report.chart;
		if (!chart)
			return;
		var from = this.form.elements.from, to = this.form.elements.to;
		chart.onBrush = function (r) {
			from.value = r ? +r[0].toFixed(6) + 's' : '';
			to.value = r ? +r[1].toFixed(6) + 's' : '';
			self.brush = r;
			self.brushText = r ? from.value : null;
			self.apply();
		};
		/* the range is gone once the form's from says something else */
		if (this.brush && from.value !== this.brushText)
			this.brush = null;
		this.liveControl(chart);
		var tl = M.report.proc && M.report.proc.timeline;
		if (this.brush && tl && tl.bucket_s > 0) {
			var n = tl.heap_bytes.length;
			var lo = Math.max(0, Math.floor(this.brush[0] / tl.bucket_s + 1e-6));
			var hi = Math.min(n, Math.ceil(this.brush[1] / tl.bucket_s - 1e-6));
			if (hi > lo) {
				chart.range = [lo, hi];
				chart.brushed = true;
				chart.reset.disabled = false;
				chart.draw();
			}
		}
	};

	/* The slider of the moment to show what was live at, under CHART. */
	Recording.prototype.liveControl = function (chart) {
		var self = this, p = M.report.proc, foot = chart.resolution.parentNode;
		if (!p || !foot)
			return;
		var span = p.duration_s || p.timeline.bucket_s * p.timeline.heap_bytes.length;
		var els = this.form.elements, at = parseFloat(els.to.value);
		var slider = M.el('input', { type: 'range', class: 'live-at', min: '0', max: String(span),
			step: 'any', 'aria-label': 'the moment to show what was live at' });
		slider.value = String(els.lifetime.value === 'only_not_deallocated_in_current_range' && at >= 0 ? at : span);
		var label = M.el('span', { class: 'live-label' });
		var show = function () { label.textContent = M.fmt.seconds(+slider.value); };
		slider.addEventListener('input', show);
		show();
		var go = M.el('button', { type: 'button', class: 'btn live-go', text: 'Show what was live then',
			onclick: function () {
				/* a range dragged: what was made in it and still live at its end */
				if (!self.brush)
					els.from.value = '';
				els.to.value = +(+slider.value).toFixed(6) + 's';
				els.lifetime.value = 'only_not_deallocated_in_current_range';
				self.apply();
			} });
		foot.insertBefore(M.el('span', { class: 'live-ctl' }, 'Live at ', slider, label, go), chart.reset);
	};

	/* The page's URL: the filter shown, and the process shown (pid=) when
	 * it is not the one the page opens on. */
	Recording.prototype.url = function () {
		var q = new URLSearchParams(this.shown || '');
		var r = M.report;
		if (r && r.proc && r.data.processes.indexOf(r.proc) !== r.first)
			q.set('pid', String(r.proc.pid));
		var s = q.toString();
		history.replaceState(null, '', location.pathname + (s ? '?' + s : ''));
	};

	/* The panel goes after the summary and the chart (what a user looks at
	 * first; the filters refine it), the query console after it, a way
	 * back in the bar. */
	Recording.prototype.place = function () {
		var main = this.root.querySelector('main'), bar = this.root.querySelector('.topbar');
		if (!main) {
			this.root.replaceChildren(topbar(), main = M.el('main'));
			bar = null;
		}
		if (bar) {
			var brand = bar.querySelector('.brand');
			brand.replaceWith(M.el('a', { class: 'brand', href: '/', title: 'all recordings',
				text: 'memtrace' }));
		}
		var chart = main.querySelector('.chart'), after = chart && chart.closest('.card');
		main.insertBefore(this.panel, after ? after.nextSibling : main.firstChild);
		if (this.console)
			main.insertBefore(this.console.card, this.panel.nextSibling);
		/* the single allocations after the call sites */
		var sites = main.querySelector('table.sites:not(.functions)');
		var card = sites && sites.closest('.card');
		if (this.allocations)
			main.insertBefore(this.allocations.card, card ? card.nextSibling : null);
	};

	function boot() {
		var root = document.getElementById('memtrace');
		if (!root || document.getElementById('memtrace-data'))
			return;
		var m = /^\/ui\/([^/]+)$/.exec(location.pathname);
		if (m) {
			M.gui = new Recording(root, decodeURIComponent(m[1]));
			M.gui.apply();
			M.gui.watch();
		} else {
			listPage(root).then(function () { document.body.setAttribute('data-state', 'ready'); });
		}
	}

	if (document.readyState === 'loading')
		document.addEventListener('DOMContentLoaded', boot);
	else
		boot();
})(Memtrace);
