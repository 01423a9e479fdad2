/*
 * report.js - the report page: a process's summary, memory over time
 * (chart.js), the flamegraph (flamegraph.js) and the call sites (table.js),
 * with a process selector when the recording holds several.  After a leak
 * scan, "leaked" is the blocks of the kind the selector picks (definitely
 * and indirectly lost at first) and the reachable ones are "still held";
 * frames without symbols come with a hint about how to get them.
 *
 * Also the functions (functions.js) and the sizes and lifetimes
 * (histo.js).
 *
 * Its data is one object, embedded by `memtrace export --format html` in
 * <script type="application/json" id="memtrace-data">, or fetched from the
 * URL in data-src of #memtrace (the server's REST API):
 *
 *   {"memtrace_html": 1, "recording": PATH, "truncated": BOOL,
 *    "filtered": BOOL, "filter": {key: value as given} or null,
 *    "weight": the flamegraph's first weight (null: each process opens on
 *      its leaks when it has any, else on its peak; the call sites are
 *      sorted by the same),
 *    "processes": [{"pid", "ppid", "exe", "argv", "backend", "main" (the
 *      recorded command), "duration_s", "span_s" and "span_from_s" (the part
 *      of the run the figures cover: the filter's from/to; rates divide by it),
 *      "exit_status" (null: did not exit), "start_unix_s", "lost_events",
 *      "totals": the keys of `memtrace report --json`,
 *      "leak_kinds": what the leak scan at the end found the blocks not
 *        freed to be ({"complete", "why", "definite_allocations",
 *        "definite_bytes", ... as the JSON report's), or null without a
 *        scan; with one, the sites carry the same KIND_allocations and
 *        KIND_bytes fields and the page has a leak-kind selector,
 *      "timeline": {"bucket_s", "time_step_s" (the smallest step between
 *                   two event times, or null), "heap_bytes": [], "allocations": [],
 *                   "frees": [], "temporary": [], "leaked_bytes": [],
 *                   "site_cells" (export only, when the sites have times):
 *                   the cells of the grid of their "times", each
 *                   heap_bytes.length / site_cells buckets}
 *                   (equal buckets from the start),
 *      "sizes", "lifetimes", "never_freed": as `memtrace report --sizes`,
 *      "markers": [{"time_s", "value", "text"}],
 *      "threads": [{"tid", "allocations", "allocated_bytes"}]: its threads
 *                 (what each allocated, under the filter),
 *      "site_threads" (export only, a process of several threads): the
 *                 tids the sites' "by_thread" number,
 *      "site_fields": [...], "sites": [[figures..., stack]]: STACK the
 *                     node of the site's leaf frame in "stacks"
 *                     (from the server, a last field "live_series": the
 *                     site's live bytes over time, or null; from the html
 *                     export, "times": the cell of the grid where all of its
 *                     allocations were made, or [cell, allocations, bytes,
 *                     leaked, leaked bytes, temporary, ...] by cell: what
 *                     a range dragged across the chart selects; and
 *                     "by_thread", the same by thread number: what a thread
 *                     picked in the bar selects),
 *      "stack_fields": ["frame", "parent"], "stacks": [[frame index,
 *                     parent node or -1]]: the stacks as a tree,
 *      "frame_fields": [...], "frames": [[name, file index, line, module
 *                     index, inlined, symbolized]], "files": [], "modules": []}],
 *    "diff" (export --base only): {"base": BASE's path, "exe", "site_fields",
 *      "sites", "frame_fields", "frames", "files", "modules"} - the sites of
 *      every process of both recordings matched by their frames, with
 *      base_* fields (BASE's figures); the flamegraph draws them coloured
 *      by change}
 *
 * Sites and frames are arrays named by *_fields to keep big recordings'
 * pages small; Memtrace.sites turns them into objects.
 */
(function (M) {
	'use strict';

	function section(title, hint) {
		var body = M.el('div', { class: 'card-body' });
		var s = M.el('section', { class: 'card' },
			M.el('div', { class: 'card-head' }, M.el('h2', { text: title }),
				hint ? M.el('p', { class: 'hint', text: hint }) : null),
			body);
		return { el: s, body: body };
	}

	/* NOTE: a line under the figure that says what it leaves out. */
	function figure(key, label, big, sub, warn, note) {
		return M.el('div', { class: 'figure' + (warn ? ' warn' : ''), 'data-key': key },
			M.el('div', { class: 'figure-label', text: label }),
			M.el('div', { class: 'figure-value', text: big }),
			M.el('div', { class: 'figure-sub', text: sub }),
			note ? M.el('div', { class: 'figure-note', text: note }) : null);
	}

	function inBlocks(n, bytes) {
		return M.fmt.value(bytes, 'bytes') + ' in ' + M.fmt.value(n, 'blocks');
	}

	/* What the C and C++ runtimes kept until exit (libstdc++'s emergency
	 * pool, stdio's buffers): never counted as leaked, and said so where
	 * "leaked" is shown. */
	function runtimeNote(p) {
		var t = p.totals;
		return t.runtime_held_allocations ? 'Not counted: ' + inBlocks(t.runtime_held_allocations,
			t.runtime_held_bytes) + ' the C/C++ runtime holds until exit (its own pools and buffers, ' +
			'freed only by a memory checker\'s __libc_freeres): not leaks.' : '';
	}

	/* The leak figures of process P: what was not freed; with a leak scan
	 * (and the whole run's figures, T null), the blocks of leak kind KIND
	 * as "leaked" and the reachable ones as "still held". */
	function leakFigures(p, t, kind) {
		var f = M.fmt, lk = p.leak_kinds;
		if (!lk || t)
			return [figure('leaked', lk ? 'Not freed' : 'Leaked', f.bytes((t || p.totals).leaked_bytes),
				inBlocks((t || p.totals).leaked_allocations, (t || p.totals).leaked_bytes) +
				(lk ? ' (the leak kinds are the whole run\'s: none for a part of it)' : ''),
				(t || p.totals).leaked_bytes > 0, runtimeNote(p))];
		var k = M.leakKind(kind);
		var v = k.kinds ? M.ofKind(lk, k) : [p.totals.leaked_allocations, p.totals.leaked_bytes];
		var held = M.ofKind(lk, M.leakKind('reachable'));
		var label = k.name === 'reachable' ? 'Still held' : k.name === 'all' ? 'Not freed' : 'Leaked';
		var out = [figure('leaked', label, f.bytes(v[1]), inBlocks(v[0], v[1]) + ': ' + k.label,
			v[1] > 0 && k.name !== 'reachable', runtimeNote(p))];
		if (k.name !== 'reachable')
			out.push(figure('held', 'Still held', f.bytes(held[1]), inBlocks(held[0], held[1]) +
				' a pointer still reached at exit: not leaks', false, lk.complete ? '' :
				'The leak scan could not read all it needed' + (lk.why ? ' (' + lk.why + ')' : '') +
				': every block counts as still held.'));
		return out;
	}

	/* SEL (a range selected in the page): {totals: the figures of the
	 * allocations made in it, span_s}; the others stay the whole run's. */
	function figures(p, filtered, sel, kind) {
		var t = sel ? sel.totals : p.totals, f = M.fmt;
		var span = sel ? sel.span_s : p.span_s !== undefined ? p.span_s : p.duration_s;
		var tempShare = t.allocations ?
			(100 * t.temporary_allocations / t.allocations).toFixed(1) + '% of allocations' : '';
		return [
			figure('allocations', 'Allocations', f.count(t.allocations), span > 0 ?
				f.count(t.allocations / span) + ' per second on average' +
				(sel ? (sel.range ? ' over the ' + f.seconds(span) + ' selected' : '') : filtered && span < p.duration_s ?
					' over the ' + f.seconds(span) + ' filtered' : '') : ''),
			sel ? figure('frees', 'Frees', f.count(t.frees), 'these allocations less the leaked ones') :
			figure('frees', 'Frees', f.count(t.frees), t.unmatched_frees ?
				f.count(t.unmatched_frees) + ' of blocks allocated before tracing' :
				'each matched an allocation'),
			figure('allocated', 'Allocated', f.bytes(t.allocated_bytes),
				f.value(t.allocated_bytes, 'bytes')),
			figure('peak', 'Peak heap', f.bytes(p.totals.peak_bytes), f.value(p.totals.peak_bytes, 'bytes') + ' in ' +
				f.value(p.totals.peak_allocations, 'blocks') + ' at ' + f.seconds(p.totals.peak_time_s) +
				(sel ? sel.range ? ' (the whole run\'s)' : ' (the whole process\'s)' : '')),
		].concat(leakFigures(p, sel ? t : null, kind), [
			figure('temporary', 'Temporary', f.count(t.temporary_allocations),
				(tempShare || f.value(t.temporary_allocations, 'allocations'))),
			figure('lost', 'Lost events', f.count(p.lost_events), p.lost_events ?
				'figures are incomplete' : 'nothing was lost', p.lost_events > 0),
		]);
	}

	/* The weight the flamegraph of process P opens on, when the page names
	 * none: what the user asks first of a profile, its leaks when it has
	 * any (with a scan, the lost blocks), else its peak. */
	function firstWeight(p) {
		var lost = p.leak_kinds ? M.ofKind(p.leak_kinds, M.leakKinds[0])[1] : p.totals.leaked_bytes;
		return lost > 0 ? 'leaked' : 'peak';
	}

	/* Frames without a symbol ("module+0xOFFSET") of process P: what the
	 * page tells its user to install, or null. */
	function symbolsHint(p) {
		var mods = new Map();
		M.sites(p).forEach(function (s) {
			s.frames.forEach(function (f) {
				if (f.kind === 'unknown' && f.module && /\+0x[0-9a-f]+$/.test(f.name))
					mods.set(f.module, (mods.get(f.module) || 0) + 1);
			});
		});
		if (!mods.size)
			return null;
		var list = Array.from(mods.keys()).sort(function (a, b) { return mods.get(b) - mods.get(a); });
		return M.el('div', { class: 'note symbols-hint' },
			'Frames named module+0xOFFSET are code memtrace found no symbols for, in ' +
			list.slice(0, 4).join(', ') + (list.length > 4 ? ' and ' + (list.length - 4) + ' more' : '') +
			'.  Their debug symbols name them: on Debian, install the -dbgsym package of the package ' +
			'that holds the file (dpkg -S FILE names it; the packages come from the debian-debug ' +
			'archive), or let memtrace fetch them from a debuginfod server: DEBUGINFOD_URLS set to ' +
			'Debian\'s, debuginfod.debian.net, for memtrace export (or report, server).  A program of ' +
			'your own: build it with -g and do not strip it.');
	}

	/* The leak-kind selector (when the process had a leak scan): one in
	 * each leak view, all showing the same kind.  PICK(name) on change. */
	function kindControl(pick) {
		var sel = M.el('select', { class: 'leak-kind', 'aria-label': 'leak kind' },
			M.leakKinds.map(function (k) { return M.el('option', { value: k.name, text: k.label }); }));
		sel.addEventListener('change', function () { pick(sel.value); });
		var title = 'What the leak scan at the end found the blocks never freed to be (valgrind\'s kinds): ' +
			'nothing points at a definitely lost block, only lost blocks at an indirectly lost one, ' +
			'only pointers into its middle at a possibly lost one; a still held block was reachable.';
		return { select: sel, title: title,
			el: M.el('label', { class: 'leak-kind-label', hidden: true, title: title }, 'Leaks: ', sel) };
	}

	function meta(p) {
		var parts = ['pid ' + p.pid, p.backend ? p.backend + ' backend' : null, M.fmt.seconds(p.duration_s)];
		parts.push(M.fmt.state(p));
		if (p.start_unix_s)
			parts.push('started ' + new Date(p.start_unix_s * 1000).toLocaleString());
		return parts.filter(Boolean).join(' \u00b7 ');
	}

	function procName(p) {
		return M.fmt.basename(p.exe) + ' [' + p.pid + ']';
	}

	/* "29755 (main) · 3,000 allocations": a thread of process P */
	function threadName(p, t) {
		return t.tid + (t.tid === p.pid ? ' (main)' : '') + ' \u00b7 ' + M.fmt.count(t.allocations) +
			(t.allocations === 1 ? ' allocation' : ' allocations');
	}

	/* The thread selector of process P (heaptrack's and memray's): every
	 * view then shows the allocations one thread made.  Where a page can
	 * filter (the server's GUI sets Memtrace.onThread), a select; THREAD is
	 * the one its filter shows.  The html report holds every thread's
	 * allocations summed, so it lists them and says how to make a page of
	 * one. */
	function threadControl(p, thread, pick) {
		var threads = p.threads || [];
		if (!M.onThread && !p.site_threads)
			return threads.length > 1 ? M.el('span', { class: 'thread-list',
				title: 'One thread\'s page: memtrace export --format html --thread TID (or the server\'s ' +
					'GUI, which can pick one).\n' + threads.map(function (t) { return threadName(p, t); }).join('\n'),
				text: threads.length + ' threads' }) : null;
		if (!M.onThread)
			threads = threads.filter(function (t) { return p.site_threads.indexOf(t.tid) >= 0; });
		if (threads.length < 2 && !thread)
			return null; /* one thread: nothing to choose */
		var known = threads.some(function (t) { return String(t.tid) === thread; });
		var sel = M.el('select', { class: 'thread-select', 'aria-label': 'thread' },
			M.el('option', { value: '', text: 'all ' + threads.length + (threads.length === 1 ? ' thread' : ' threads') }),
			threads.map(function (t) { return M.el('option', { value: String(t.tid), text: threadName(p, t) }); }),
			thread && !known ? M.el('option', { value: thread, text: thread + ' (not a thread of this process)' }) : null);
		sel.value = thread || '';
		sel.addEventListener('change', function () { (M.onThread || pick)(sel.value); });
		return M.el('label', { class: 'thread-label' }, 'Thread ', sel);
	}

	/* The sites of process P as far as the allocations of the cells PICK
	 * takes go: the cells of FIELD ("times": of the grid, "by_thread": the
	 * threads), with the totals of those; the figures no cell holds (peak
	 * bytes) are zero. */
	function sitesIn(p, field, pick) {
		var out = [], t = { allocations: 0, allocated_bytes: 0, leaked_allocations: 0, leaked_bytes: 0,
			temporary_allocations: 0, frees: 0 };
		M.sites(p).forEach(function (s) {
			var x = s[field], o;
			if (typeof x === 'number') {
				if (!pick(x))
					return;
				o = { allocations: s.allocations, allocated_bytes: s.allocated_bytes,
					leaked_allocations: s.leaked_allocations, leaked_bytes: s.leaked_bytes,
					temporary_allocations: s.temporary_allocations };
			} else {
				o = { allocations: 0, allocated_bytes: 0, leaked_allocations: 0, leaked_bytes: 0,
					temporary_allocations: 0 };
				for (var i = 0; x && i < x.length; i += 6) {
					if (!pick(x[i]))
						continue;
					o.allocations += x[i + 1];
					o.allocated_bytes += x[i + 2];
					o.leaked_allocations += x[i + 3];
					o.leaked_bytes += x[i + 4];
					o.temporary_allocations += x[i + 5];
				}
				if (!o.allocations)
					return;
			}
			o.peak_bytes = 0;
			o.frames = s.frames;
			o._useful = s._useful; /* the call-site table's, of the same frames */
			for (var k in t)
				if (k !== 'frees')
					t[k] += o[k];
			out.push(o);
		});
		t.frees = t.allocations - t.leaked_allocations;
		return { sites: out, totals: t };
	}

	/* The process a page opens on by default: the recorded command, else
	 * the first. */
	function mainProcess(procs) {
		for (var i = 0; i < procs.length; i++)
			if (procs[i].main)
				return i;
		return 0;
	}

	/* The one the page's query names (?pid=N), else the default. */
	function firstProcess(procs) {
		var want = new URLSearchParams(location.search).get('pid');
		for (var i = 0; want && i < procs.length; i++)
			if (String(procs[i].pid) === want)
				return i;
		return mainProcess(procs);
	}

	/* Draws DATA into ROOT; returns the widgets and select(i), which shows
	 * process I. */
	function render(root, data) {
		var procs = data.processes || [];
		root.replaceChildren();
		var picker = null;
		if (procs.length > 1) {
			picker = M.el('select', { class: 'proc-select', 'aria-label': 'process' },
				procs.map(function (p, i) {
					return M.el('option', { value: String(i), text: procName(p) });
				}));
		}
		var threadSlot = M.el('span', { class: 'thread-slot' });
		root.appendChild(M.el('header', { class: 'topbar' },
			M.el('span', { class: 'brand', text: 'memtrace' }),
			M.el('span', { class: 'recording', title: data.recording,
				text: M.fmt.basename(data.recording) }),
			picker ? M.el('label', { class: 'proc-label' }, 'Process ', picker) : null, threadSlot));
		var main = M.el('main');
		root.appendChild(main);
		var notes = [];
		if (data.truncated)
			notes.push('The recording is truncated: it ends early, and its figures stop there.');
		if (data.filtered)
			notes.push('Filtered' + (data.filter ? ' by ' + Object.keys(data.filter).map(function (k) {
				return k + '=' + data.filter[k];
			}).join(', ') : '') + ': the figures count only the allocations matched, and rates ' +
				'divide by the span kept.');
		notes.forEach(function (n) { main.appendChild(M.el('div', { class: 'note', text: n })); });
		if (!procs.length) {
			main.appendChild(M.el('div', { class: 'note', text: 'The recording holds no process.' }));
			return null;
		}

		var summary = M.el('section', { class: 'card summary' });
		var chart = section('Memory over time', 'Hover for the figures of an interval.');
		var flame = section('Flamegraph', (data.diff ? 'Differential: red grew since ' +
			M.fmt.basename(data.diff.base) + ', blue shrank (the processes of both recordings merged). ' : '') +
			'Widths are shares of the weight chosen. ' +
			'Click a frame to zoom into it, hover for its figures.');
		var table = section('Call sites', 'Each site named by its first frame outside the allocator and ' +
			'the runtime.  Click a column to sort, a row to see its whole stack.');
		var fns = section('Functions', 'Self: what a function asked the allocator for itself; incl.: with ' +
			'everything it called.  Click a column to sort, a function for its callers and callees.');
		var histo = section('Sizes and lifetimes', 'How many allocations of each size (powers of two), and ' +
			'how long blocks lived before their free.');
		[summary, chart.el, flame.el, table.el, fns.el, histo.el].forEach(function (e) { main.appendChild(e); });
		main.appendChild(M.el('footer', { text: 'memtrace report of ' + (data.recording || 'a recording') }));

		var r = {
			data: data,
			chart: new M.Chart(chart.body),
			flame: new M.Flamegraph(flame.body, { weight: data.weight || 'peak' }),
			table: new M.SiteTable(table.body),
			functions: new M.FunctionTable(fns.body),
			histo: new M.Histograms(histo.body),
		};
		/* the leak-kind selectors, over the flamegraph and the call sites */
		r.kinds = [flame.body, table.body].map(function (body) {
			var c = kindControl(function (name) { r.setKind(name, true); });
			body.insertBefore(c.el, body.firstChild);
			return c;
		});
		var symbols = M.el('div', { class: 'symbols-slot' });
		flame.body.insertBefore(symbols, flame.body.firstChild);
		/* The summary of process P; SEL: a range selected (see brush). */
		function summarize(p, sel) {
			summary.replaceChildren();
			[M.el('h1', { text: M.fmt.basename(p.exe) || 'process ' + p.pid }),
				M.el('div', { class: 'cmd', text: (p.argv || []).join(' ') || p.exe, title: p.exe }),
				M.el('div', { class: 'meta', text: meta(p) }),
				M.el('div', { class: 'figures' }, figures(p, data.filtered, sel, r.kind)),
				sel ? M.el('div', { class: 'note range-note', text: sel.note }) : null].forEach(function (e) {
				if (e)
					summary.appendChild(e);
			});
		}
		/* A range dragged across the chart (seconds [from, to], or null:
		 * the whole run), in the page itself: the flamegraph, the call sites
		 * and the functions count the allocations made in it, from the
		 * sites' times, on their grid.  (The server's GUI asks the server
		 * instead: it sets the chart's onBrush after this.) */
		r.brush = function (range) {
			var p = r.proc, tl = p.timeline, cells = tl.site_cells;
			r.range = null;
			/* a range or a thread, not both: the page has no figures of both */
			var ts = threadSlot.querySelector('.thread-select');
			if (ts && !M.onThread && ts.value) {
				ts.value = '';
				r.thread = null;
			}
			r.kindsFor(p, !range);
			if (!range) {
				summarize(p, null);
				r.showSites(r.sitesOf(p), true);
				return;
			}
			if (!cells) {
				summarize(p, { totals: p.totals, span_s: p.span_s !== undefined ? p.span_s : p.duration_s,
					note: 'The chart shows ' + M.fmt.seconds(range[0]) + ' to ' + M.fmt.seconds(range[1]) +
						', but this page\'s call sites carry no times (a recording too big for them to fit): ' +
						'every other view is the whole run\'s.  memtrace export --from ' + +range[0].toFixed(6) +
						's --to ' + +range[1].toFixed(6) + 's makes a page of that range.' });
				return;
			}
			var per = tl.heap_bytes.length / cells, cell = tl.bucket_s * per;
			var lo = Math.max(0, Math.floor(range[0] / cell + 1e-6)), hi = Math.min(cells, Math.ceil(range[1] / cell - 1e-6));
			if (hi <= lo)
				hi = lo + 1;
			var got = sitesIn(p, 'times', function (c) { return c >= lo && c < hi; });
			r.range = [lo * cell, hi * cell];
			summarize(p, { totals: got.totals, span_s: (hi - lo) * cell, range: true,
				note: 'Selected ' + M.fmt.seconds(lo * cell) + ' to ' + M.fmt.seconds(hi * cell) +
					(per > 1 ? ' (the page keeps the sites\' times in steps of ' + M.fmt.seconds(cell) + ')' : '') +
					': the figures above, the flamegraph, the call sites and the functions count the allocations ' +
					'made in it, as --from and --to do.  The peak, the bytes at the peak, and the sizes and ' +
					'lifetimes stay the whole run\'s (the server\'s GUI filters those too).' });
			r.showSites(got.sites, true);
		};
		/* SITES in the flamegraph, the call sites and the functions; with
		 * LATER (a range dragged), the tables below the flamegraph once the
		 * event is answered (r.settling until then). */
		r.showSites = function (sites, later) {
			if (!data.diff)
				r.flame.setSites(sites);
			clearTimeout(r.settling);
			r.settling = null;
			var tables = function () {
				r.settling = null;
				r.table.setSites(sites);
				r.functions.setSites(sites);
			};
			if (later)
				r.settling = setTimeout(tables, 0);
			else
				tables();
		};
		/* A thread picked in the bar of the html report (TID, or '' for all),
		 * from the sites' "by_thread": the views the range follows follow
		 * the thread.  (The server's GUI asks the server: Memtrace.onThread.) */
		r.pickThread = function (tid) {
			var p = r.proc;
			r.thread = tid || null;
			r.range = null;
			if (r.chart.range) {
				r.chart.brushed = false; /* no onBrush: the thread replaces the range */
				r.chart.zoom(null);
			}
			r.kindsFor(p, !tid);
			if (!tid) {
				summarize(p, null);
				r.showSites(r.sitesOf(p), true);
				return;
			}
			var k = p.site_threads.indexOf(+tid);
			var got = sitesIn(p, 'by_thread', function (c) { return c === k; });
			summarize(p, { totals: got.totals, span_s: p.duration_s,
				note: 'Thread ' + tid + (+tid === p.pid ? ' (the main thread)' : '') + ': the figures above, ' +
					'the flamegraph, the call sites and the functions count the allocations it made, as ' +
					'--thread does.  The chart, the peak, and the sizes and lifetimes stay the whole ' +
					'process\'s (the server\'s GUI filters those too).' });
			r.showSites(got.sites, true);
		};
		r.chart.onBrush = r.brush;
		/* The sites of process P as the leak kind chosen counts them. */
		r.sitesOf = function (p) {
			return M.kindSites(p, r.kind);
		};
		/* Leak kind NAME in every view of the whole run; SHOW: the
		 * flamegraph and the call sites then weigh the leaks (the user
		 * asked about them). */
		r.setKind = function (name, show) {
			var p = r.proc;
			r.kind = name;
			r.kinds.forEach(function (c) { c.select.value = name; });
			if (r.range || r.thread)
				return; /* (the selectors are disabled then) */
			summarize(p, null);
			if (show) {
				/* (as if picked by hand: kept under the GUI's filters) */
				if (!data.diff) {
					r.flame.wi = M.weights.findIndex(function (w) { return w.name === 'leaked'; });
					r.flame.chosen = true;
				}
				r.table.key = 'leaked_bytes';
				r.table.desc = true;
				r.table.chosen = true;
			}
			r.showSites(r.sitesOf(p));
		};
		/* A range or a thread of the html report has no leak kinds: the
		 * selectors wait for the whole run. */
		r.kindsFor = function (p, whole) {
			r.kinds.forEach(function (c) {
				c.el.hidden = !p.leak_kinds;
				c.select.disabled = !whole;
				c.el.title = c.title + (whole ? '' : '  (Off: a part of the run has no leak kinds here; its ' +
					'leaked figures are every block not freed.)');
			});
		};
		r.select = function (i) {
			var p = procs[i];
			r.proc = p;
			r.range = null;
			r.kind = p.leak_kinds ? M.leakKinds[0].name : 'all';
			r.kinds.forEach(function (c) { c.select.value = r.kind; });
			r.kindsFor(p, true);
			symbols.replaceChildren(symbolsHint(p) || '');
			summarize(p, null);
			r.thread = null;
			threadSlot.replaceChildren(threadControl(p, data.filter && data.filter.thread, r.pickThread) || '');
			r.chart.setProcess(p);
			/* the weight the page names (--weight), else the process's
			 * own; the call sites sorted by the same */
			var w = data.weight || firstWeight(p), wi = M.weights.findIndex(function (x) { return x.name === w; });
			if (!data.weight && !r.flame.chosen) {
				if (data.diff)
					r.flame.setWeight(wi);
				else
					r.flame.wi = wi;
			}
			if (!r.table.chosen) {
				r.table.key = M.weights[wi].field;
				r.table.desc = true;
			}
			r.showSites(r.sitesOf(p));
			r.histo.setProcess(p);
		};
		if (picker)
			picker.addEventListener('change', function () { r.select(+picker.value); });
		if (data.diff)
			r.flame.setSites(M.sites(data.diff), true);
		r.first = mainProcess(procs);
		var shown = firstProcess(procs);
		r.select(shown);
		if (picker)
			picker.value = String(shown);
		return r;
	}

	/* The page of the server: data from URL. */
	function load(root, url) {
		return fetch(url).then(function (res) {
			if (!res.ok)
				throw new Error(res.status + ' ' + res.statusText);
			return res.json();
		}).then(function (data) {
			M.report = render(root, data);
			return M.report;
		}, function (e) {
			root.replaceChildren(M.el('div', { class: 'note',
				text: 'Cannot load ' + url + ': ' + e.message }));
		});
	}

	function boot() {
		var root = document.getElementById('memtrace');
		if (!root)
			return;
		var embedded = document.getElementById('memtrace-data');
		if (embedded)
			M.report = render(root, JSON.parse(embedded.textContent));
		else if (root.getAttribute('data-src'))
			load(root, root.getAttribute('data-src'));
	}

	M.render = render;
	M.load = load;
	if (document.readyState === 'loading')
		document.addEventListener('DOMContentLoaded', boot);
	else
		boot();
})(Memtrace);
