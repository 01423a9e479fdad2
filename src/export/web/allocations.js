/*
 * allocations.js - the server's GUI lists single allocations, as
 * bytehound's does: those the page's filter matches, of the process shown,
 * a page at a time from GET /data/ID/allocations (the server keeps only
 * what the page asks for), sorted by time, address or size either way.
 * Each row: size, address, when it was allocated and freed, how long it
 * lived, its thread and its site's useful frame; a click unfolds its
 * stack.  Loaded on demand: a listing replays the recording.  Sets body's
 * data-astate to "ready" or "error" after each page, for the browser tests.
 */
(function (M) {
	'use strict';
	var PAGE = 100;

	/* REC is gui.js's Recording: its id and the filter shown. */
	function AllocationList(rec) {
		var self = this;
		this.rec = rec;
		this.skip = 0;
		this.open = false;
		this.sort = M.el('select', { class: 'alloc-sort', 'aria-label': 'sort by',
			onchange: function () { self.load(0); } },
		[['timestamp', 'by time'], ['size', 'by size'], ['address', 'by address']].map(function (o) {
			return M.el('option', { value: o[0], text: o[1] });
		}));
		this.order = M.el('select', { class: 'alloc-order', 'aria-label': 'order',
			onchange: function () { self.load(0); } },
		[['asc', 'ascending'], ['dsc', 'descending']].map(function (o) {
			return M.el('option', { value: o[0], text: o[1] });
		}));
		this.prev = M.el('button', { type: 'button', class: 'btn alloc-prev', text: '\u2190 Previous',
			disabled: true, onclick: function () { self.load(Math.max(0, self.skip - PAGE)); } });
		this.next = M.el('button', { type: 'button', class: 'btn alloc-next', text: 'Next \u2192',
			disabled: true, onclick: function () { self.load(self.skip + PAGE); } });
		this.show = M.el('button', { type: 'button', class: 'btn primary alloc-show', text: 'List the allocations',
			onclick: function () { self.open = true; self.load(0); } });
		this.status = M.el('span', { class: 'gui-qstatus alloc-status', role: 'status' });
		this.body = M.el('tbody');
		this.table = M.el('div', { class: 'tbl-scroll', hidden: true }, M.el('table', { class: 'sites allocations' },
			M.el('thead', null, M.el('tr', null, ['#', 'Size', 'Address', 'Allocated', 'Freed', 'Lifetime',
				'Thread', 'Function'].map(function (h, i) {
				return M.el('th', { scope: 'col', class: i < 6 && i !== 2 ? 'num' : null, text: h });
			}))), this.body));
		this.card = M.el('section', { class: 'card gui-allocations' },
			M.el('div', { class: 'card-head' }, M.el('h2', { text: 'Allocations' }),
				M.el('p', { class: 'hint', text: 'One by one, as the filters above match them, ' +
					M.fmt.count(PAGE) + ' a page; a click shows one\'s stack.' })),
			M.el('div', { class: 'card-body' },
				M.el('div', { class: 'toolbar' }, this.show, this.sort, this.order, this.prev, this.next,
					this.status),
				this.table));
	}

	/* The filter changed (or the process): the first page again, if open. */
	AllocationList.prototype.refresh = function () {
		if (this.open)
			this.load(0);
	};

	AllocationList.prototype.url = function (skip) {
		var q = new URLSearchParams(this.rec.shown || '');
		var p = M.report && M.report.proc;
		if (p)
			q.set('pid', String(p.pid));
		q.set('skip', String(skip));
		q.set('count', String(PAGE));
		q.set('sort_by', this.sort.value);
		q.set('order', this.order.value);
		return '/data/' + encodeURIComponent(this.rec.id) + '/allocations?' + q.toString();
	};

	AllocationList.prototype.load = function (skip) {
		var self = this, url = this.url(skip), token = this.token = {};
		this.status.textContent = 'Loading\u2026';
		this.status.className = 'gui-qstatus alloc-status';
		document.body.setAttribute('data-astate', 'loading');
		return fetch(url).then(function (res) {
			return res.json().catch(function () { return {}; }).then(function (body) {
				if (!res.ok)
					throw new Error(body.error || res.status + ' ' + res.statusText);
				return body;
			});
		}, function () {
			throw new Error('The server does not answer (has it stopped?)');
		}).then(function (data) {
			if (self.token !== token)
				return;
			self.skip = skip;
			self.draw(data);
			document.body.setAttribute('data-astate', 'ready');
		}, function (e) {
			if (self.token !== token)
				return;
			self.status.textContent = e.message;
			self.status.className = 'gui-qstatus alloc-status bad';
			document.body.setAttribute('data-astate', 'error');
		});
	};

	/* The recorder names blocks by serial number, not address (the
	 * top bit set, as the API gives them): those say so. */
	function addressCell(addr) {
		var serial = /^0x[89a-f][0-9a-f]{15}$/i.test(addr || '');
		if (!serial)
			return M.el('td', { class: 'where', text: addr || '\u2013' });
		var n = BigInt(addr) & ((BigInt(1) << BigInt(63)) - BigInt(1));
		return M.el('td', { class: 'where', title: 'the recorder names blocks by their number, not their address (' +
			addr + ')', text: 'block #' + n.toString() });
	}

	function frames(bt) {
		return (bt || []).map(function (f) {
			return { name: f.name || f.function || f.address, file: f.file, line: f.line || 0, module: f.module };
		});
	}

	AllocationList.prototype.draw = function (data) {
		var self = this, list = data.allocations || [];
		this.table.hidden = false;
		this.show.hidden = true;
		var rows = [];
		list.forEach(function (a) {
			var fr = frames(a.backtrace), k = M.usefulFrame ? M.usefulFrame(fr) : 0, d = a.deallocation;
			var tr = M.el('tr', { class: 'alloc', tabindex: '0', 'data-index': String(a.index) },
				M.el('td', { class: 'num', text: M.fmt.count(a.index + 1) }),
				M.el('td', { class: 'num', 'data-v': String(a.size), title: M.fmt.value(a.size, 'bytes'),
					text: M.fmt.bytes(a.size) }),
				addressCell(a.address),
				M.el('td', { class: 'num', text: M.fmt.seconds(a.timestamp_s) }),
				M.el('td', { class: 'num' + (d ? '' : ' zero'), text: d ? M.fmt.seconds(d.timestamp_s) : 'never' }),
				M.el('td', { class: 'num', text: d ? M.fmt.seconds(d.lifetime_s) : '\u2013' }),
				M.el('td', { class: 'num', text: String(a.thread) }),
				M.el('td', { class: 'fn' }, M.el('span', { class: 'name', text: fr.length ? fr[k].name : '[no stack]' }),
					fr.length > k + 1 ? M.el('span', { class: 'caller', text: 'from ' + fr[k + 1].name }) : null));
			tr.addEventListener('click', function () {
				if (tr.nextSibling && tr.nextSibling.classList.contains('stack')) {
					tr.nextSibling.remove();
					return;
				}
				tr.after(M.el('tr', { class: 'stack' }, M.el('td', { colspan: '8' }, M.el('ol', null,
					fr.map(function (f, i) {
						return M.el('li', { class: i === k ? 'useful' : null }, M.el('span', { class: 'name', text: f.name }),
							M.el('span', { class: 'where', text: M.fmt.where(f, true) }));
					})))));
			});
			rows.push(tr);
		});
		this.body.replaceChildren.apply(this.body, rows);
		var total = data.total_count || 0;
		this.status.textContent = total ? M.fmt.count(this.skip + 1) + '\u2013' +
			M.fmt.count(this.skip + list.length) + ' of ' + M.fmt.value(total, 'allocations') :
			'No allocation matches.';
		this.prev.disabled = this.skip === 0;
		this.next.disabled = this.skip + list.length >= total;
		void self;
	};

	M.AllocationList = AllocationList;
})(Memtrace);
