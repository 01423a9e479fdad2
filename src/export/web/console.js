/*
 * console.js - the query console of the server's GUI (gui.js places it
 * under the filters of /ui/ID): an SQL statement over the recording's
 * tables (memtrace-query(1)) sent to GET /data/ID/query, its rows shown as
 * a table and offered as a CSV download; and a condition over the
 * allocations table shown as the whole report (flamegraph, charts, call
 * sites: the filter form's "where") or as the list of the allocations it
 * matches.  Sets body's data-qstate to "ready" or "error" after each
 * statement, for the browser tests.
 */
(function (M) {
	'use strict';

	var EXAMPLE = 'SELECT site_id, count(*) AS leaks, sum(size) AS bytes FROM allocations\n' +
		'WHERE free_s IS NULL GROUP BY site_id ORDER BY bytes DESC LIMIT 20';
	var LIST_LIMIT = 1000;

	function cell(v) {
		if (v === null)
			return M.el('td', { class: 'num zero', text: 'NULL' });
		return M.el('td', { class: typeof v === 'number' ? 'num' : null, text: String(v) });
	}

	function table(data) {
		return M.el('table', { class: 'sites gui-qtable' },
			M.el('thead', null, M.el('tr', null, data.columns.map(function (c) {
				return M.el('th', { scope: 'col', text: c });
			}))),
			M.el('tbody', null, data.rows.map(function (r) {
				return M.el('tr', null, r.map(cell));
			})));
	}

	/* REC is gui.js's Recording: its filter form and apply(). */
	function QueryConsole(rec) {
		var self = this;
		this.rec = rec;
		this.base = '/data/' + encodeURIComponent(rec.id) + '/query';
		this.sql = M.el('textarea', { class: 'gui-sql', rows: '4', spellcheck: 'false',
			'aria-label': 'SQL statement' });
		this.sql.value = EXAMPLE;
		this.sql.addEventListener('input', function () { self.links(); });
		this.sql.addEventListener('keydown', function (ev) {
			if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
				ev.preventDefault();
				self.run();
			}
		});
		this.csv = M.el('a', { class: 'btn gui-csv', download: 'query.csv', text: 'Download CSV' });
		this.where = M.el('input', { type: 'text', class: 'gui-where', spellcheck: 'false',
			'aria-label': 'condition over allocations',
			placeholder: 'a condition over allocations, e.g. size >= 4096 AND free_s IS NULL' });
		this.status = M.el('span', { class: 'gui-qstatus', role: 'status' });
		this.result = M.el('div', { class: 'tbl-scroll gui-result' });
		this.card = M.el('section', { class: 'card gui-console' },
			M.el('div', { class: 'card-head' }, M.el('h2', { text: 'Query' }),
				M.el('p', { class: 'hint', text: 'SQL (SQLite) over the tables processes, ' +
					'allocations, sites and frames (memtrace-query(1)); read-only, with a time ' +
					'budget.  Ctrl+Enter runs it.' })),
			M.el('div', { class: 'card-body' }, this.sql,
				M.el('div', { class: 'toolbar' },
					M.el('button', { type: 'button', class: 'btn primary gui-run', text: 'Run',
						onclick: function () { self.run(); } }),
					this.csv, this.status),
				M.el('div', { class: 'toolbar gui-where-bar' }, this.where,
					M.el('button', { type: 'button', class: 'btn gui-as-flame',
						text: 'Show as flamegraph', onclick: function () { self.asReport(); } }),
					M.el('button', { type: 'button', class: 'btn gui-as-list',
						text: 'Show allocation list', onclick: function () { self.asList(); } })),
				this.result));
		this.links();
	}

	QueryConsole.prototype.url = function (sql, csv) {
		return this.base + '?' + (csv ? 'format=csv&' : '') + 'sql=' + encodeURIComponent(sql);
	};

	QueryConsole.prototype.links = function () {
		this.csv.setAttribute('href', this.url(this.sql.value, true));
	};

	/* Runs the statement in the box (or SQL, put there first). */
	QueryConsole.prototype.run = function (sql) {
		var self = this;
		if (sql !== undefined) {
			this.sql.value = sql;
			this.links();
		}
		this.status.textContent = 'Running\u2026';
		this.status.className = 'gui-qstatus';
		document.body.setAttribute('data-qstate', 'running');
		return fetch(this.url(this.sql.value)).catch(function () {
			throw new Error('The server does not answer (has it stopped?)');
		}).then(function (res) {
			return res.json().catch(function () { return {}; }).then(function (body) {
				if (!res.ok)
					throw new Error(body.error || res.status + ' ' + res.statusText);
				return body;
			});
		}).then(function (data) {
			self.result.replaceChildren(table(data));
			self.status.textContent = data.rows.length + (data.rows.length === 1 ? ' row' : ' rows');
			document.body.setAttribute('data-qstate', 'ready');
		}, function (e) {
			self.status.textContent = e.message;
			self.status.className = 'gui-qstatus bad';
			document.body.setAttribute('data-qstate', 'error');
		});
	};

	/* The condition as the report's "where" filter: flamegraph and all. */
	QueryConsole.prototype.asReport = function () {
		var f = this.rec.form.elements.namedItem('where');
		f.value = this.where.value.trim();
		return this.rec.apply().then(function () {
			var fg = document.querySelector('.fg-canvas');
			if (fg)
				fg.scrollIntoView({ block: 'center' });
		});
	};

	QueryConsole.prototype.asList = function () {
		var w = this.where.value.trim() || '1';
		return this.run('SELECT * FROM allocations WHERE (' + w + '\n) ORDER BY id LIMIT ' + LIST_LIMIT);
	};

	M.QueryConsole = QueryConsole;
})(Memtrace);
