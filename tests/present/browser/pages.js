// pages.js - what a page of the HTML report or of the server's GUI opens
// on, at a given width, and how its leak-kind selector answers:
//   node pages.js URL WIDTH FRAMES KINDS [FILTER [SHOT.png]]
// URL: a file (the html export) or the server's /ui/ID; FRAMES: frame
// names, comma-separated, whose drawn width is reported; KINDS: the leak
// kinds to pick in turn (comma-separated names of Memtrace.leakKinds).
// Reports (JSON on stdout) the order of the page's cards, the summary's
// figures, the flamegraph's weight and total, the call-site table's sort
// and rows (name, caller, what tells alike rows apart), how many lines the
// chart's buttons take, the hint about missing symbols, the selectors;
// then for each kind picked, the same figures, total and rows; in the html
// report, the same with the whole run selected as a range and after; in the
// GUI, the same once its filter form is submitted with FILTER ("name=value",
// the kind last picked kept).  Asserted by
// tests/present/export/test_pages.py and tests/present/server/test_gui.py.
'use strict';
const { launch, watchedPage, run } = require('./lib');

async function state(page, frames) {
	return page.evaluate((names) => {
		const r = Memtrace.report, q = (s) => [...document.querySelectorAll(s)];
		const figures = Object.fromEntries(q('.figure').map((f) => [f.dataset.key, {
			label: f.querySelector('.figure-label').textContent,
			value: f.querySelector('.figure-value').textContent,
			sub: f.querySelector('.figure-sub').textContent,
			note: (f.querySelector('.figure-note') || {}).textContent || null,
		}]));
		const rows = q('table.sites:not(.functions) tbody tr.site').map((tr) => {
			const td = tr.querySelector('td.fn'), cell = (k) => tr.children[q('table.sites:not(.functions) thead th')
				.findIndex((th) => th.dataset.key === k)];
			return {
				name: td.querySelector('.name').textContent,
				caller: (td.querySelector('.caller') || {}).textContent || null,
				via: (td.querySelector('.via') || {}).textContent || null,
				where: tr.querySelector('td.where').textContent,
				leaked: cell('leaked_bytes').title,
			};
		});
		const sorted = q('table.sites:not(.functions) thead th[aria-sort=descending], ' +
			'table.sites:not(.functions) thead th[aria-sort=ascending]').map((th) => th.dataset.key);
		const widths = {};
		for (const n of names) {
			const b = r.flame.rectOf(n);
			widths[n] = b ? b.w / b.canvasWidth : null;
		}
		const selectors = q('select.leak-kind').map((s) => ({
			shown: !s.closest('label').hidden && s.offsetParent !== null, value: s.value,
			disabled: s.disabled, options: [...s.options].map((o) => o.textContent),
		}));
		return {
			figures, rows, sorted, widths, selectors,
			weight: Memtrace.weights[r.flame.wi].name,
			total: document.querySelector('.fg-total').textContent,
			hint: (document.querySelector('.symbols-hint') || {}).textContent || null,
		};
	}, frames);
}

run(async ([url, width, frameList, kindList, filter, shot]) => {
	const { ctx, close } = await launch();
	try {
		const { page, errors, requests } = await watchedPage(ctx);
		await page.setViewportSize({ width: +width, height: 900 });
		const file = !/^https?:/.test(url);
		await page.goto(file ? 'file://' + require('path').resolve(url) : url);
		if (file)
			await page.waitForFunction(() => window.Memtrace && Memtrace.report);
		else
			await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 30000 });
		const frames = frameList ? frameList.split(',') : [];
		const facts = { width: +width };
		// the cards of the page's main, in order, by their title
		facts.cards = await page.$$eval('main > section.card', (cs) => cs.map((c) =>
			c.classList.contains('summary') ? 'summary' : (c.querySelector('h2') || {}).textContent));
		// the chart's buttons: how many lines of text each takes
		facts.chartButtons = await page.$$eval('.chart-foot button', (bs) => bs.filter((b) => !b.hidden).map((b) => {
			const cs = getComputedStyle(b);
			const inner = b.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
			return { text: b.textContent, lines: Math.round(inner / parseFloat(cs.lineHeight)) };
		}));
		facts.first = await state(page, frames);
		facts.kinds = {};
		for (const k of (kindList ? kindList.split(',') : [])) {
			await page.selectOption('select.leak-kind >> nth=0', k);
			facts.kinds[k] = await state(page, frames);
		}
		// the html report: a range selected (the whole run, as a range),
		// then the whole run again
		if (file && kindList) {
			await page.evaluate(() => Memtrace.report.brush([0, Memtrace.report.proc.duration_s]));
			facts.ranged = await state(page, frames);
			await page.evaluate(() => Memtrace.report.brush(null));
			facts.unranged = await state(page, frames);
		}
		if (filter) {
			const [k, v] = filter.split('=');
			await page.evaluate(() => { document.body.dataset.state = 'loading'; });
			await page.locator(`.gui-filters [name=${k}]`).fill(v);
			await page.locator('.gui-filters button[type=submit]').click();
			await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 30000 });
			facts.filtered = await state(page, frames);
		}
		if (shot) {
			await page.evaluate(() => window.scrollTo(0, 0));
			await page.screenshot({ path: shot, fullPage: true });
		}
		facts.errors = errors;
		facts.requests = file ? requests : [];
		return facts;
	} finally {
		await close();
	}
});
