// views.js - drives the views by function and the sizes of a report page
// (`memtrace export --format html`, or the server's GUI) in Chromium:
//   node views.js URL FUNCTION SHOTDIR
//
// Reports (JSON on stdout): the functions table (each function's self and
// inclusive figures, as the cells hold them), the callers and callees shown
// after a click on FUNCTION, the function a click on a caller moves to, the
// call-site table's names, the sizes and lifetimes bars, console errors and
// requests that leave the page's origin.  Screenshots go to
// SHOTDIR/views-*.png.  tests/present/export/test_views.py asserts them
// against `memtrace report --json --functions --sizes`.
'use strict';
const path = require('path');
const { launch, watchedPage, run } = require('./lib');

async function table(page, sel) {
	return page.$$eval(sel, (trs) => Object.fromEntries(trs.map((tr) => [tr.dataset.fn,
		Array.from(tr.querySelectorAll('td.num')).map((td) => Number(td.dataset.v))])));
}

run(async ([url, fn, shots]) => {
	const { ctx, close } = await launch();
	try {
		const { page, errors, requests } = await watchedPage(ctx);
		await page.goto(url.includes('://') ? url : 'file://' + path.resolve(url));
		await page.waitForFunction(() => window.Memtrace && Memtrace.report && Memtrace.report.functions);
		// the figures of report --functions: leaked is every block not
		// freed (the leak-kind selector's "all", after a leak scan), the
		// flamegraph by allocated bytes
		if (await page.locator('select.leak-kind').first().isVisible())
			await page.selectOption('select.leak-kind >> nth=0', 'all');
		await page.locator('.seg-btn[data-weight=bytes]').click();
		const facts = {};
		// every row, not the first hundred only
		const more = page.locator('table.functions ~ * button, .tbl-more button').last();
		facts.functions = await table(page, 'table.functions tbody tr.function');
		facts.count = await page.locator('.card:has(table.functions) .tbl-count').first().textContent();
		facts.sites = await page.$$eval('table.sites:not(.functions) tbody tr.site td.fn .name',
			(tds) => tds.map((td) => td.textContent));
		await page.locator(`table.functions tbody tr.function[data-fn="${fn}"]`).click();
		facts.title = await page.locator('.fn-title').textContent();
		await page.waitForFunction(() => document.querySelector('.fg-matched').textContent !== '');
		facts.flameSearch = [await page.locator('.fg-search').inputValue(),
			await page.locator('.fg-matched').textContent()];
		facts.callers = await table(page, '.fn-edges.callers tbody tr.edge');
		facts.callees = await table(page, '.fn-edges.callees tbody tr.edge');
		const card = page.locator('.card:has(table.functions)');
		await card.scrollIntoViewIfNeeded();
		await card.screenshot({ path: path.join(shots, 'views-functions.png') });
		// a click on the first caller moves to it
		const first = page.locator('.fn-edges.callers tbody tr.edge[tabindex]').first();
		facts.firstCaller = await first.getAttribute('data-fn');
		await first.click();
		facts.moved = await page.locator('.fn-title').textContent();
		// a sort by self allocations
		await page.locator('table.functions th[data-key="self.allocations"] button').click();
		facts.bySelf = await page.$$eval('table.functions tbody tr.function',
			(trs) => trs.slice(0, 3).map((tr) => tr.dataset.fn));
		facts.histo = await page.$$eval('table.histo-table tbody tr', (trs) => Object.fromEntries(trs.map((tr) =>
			[tr.dataset.key, Number(tr.querySelector('td.num').dataset.v)])));
		const h = page.locator('.card:has(table.histo-table)');
		await h.scrollIntoViewIfNeeded();
		await h.screenshot({ path: path.join(shots, 'views-sizes.png') });
		// the flamegraph bottom-up: the allocating functions at the root
		await page.locator('.fg-invert').click();
		facts.bottomUp = await page.evaluate(() => Memtrace.report.flame.boxes.filter((b) => b.row === 1)
			.map((b) => [b.n.name, b.n.v[0]]));
		await page.locator('.fg-invert').click();
		facts.topDown = await page.evaluate(() => Memtrace.report.flame.boxes.filter((b) => b.row === 1)
			.map((b) => b.n.name));
		// frames too narrow to draw become one "N more" block: 3000 sites of
		// 1 byte beside one of 1,000,000, all under main
		facts.narrow = await page.evaluate(() => {
			const f = (name) => ({ name: name, kind: 'program', module: null, file: null, line: 0 });
			const sites = [{ allocated_bytes: 1e6, allocations: 1, frames: [f('big'), f('main')] }];
			for (let i = 0; i < 3000; i++)
				sites.push({ allocated_bytes: 1, allocations: 1, frames: [f('tiny' + i), f('main')] });
			const fg = Memtrace.report.flame;
			fg.setWeight('bytes');
			fg.setSites(sites);
			const more = fg.boxes.filter((b) => b.n.more);
			return { more: more.map((b) => [b.n.name, b.n.v[0], b.row, b.w]),
				tiny: fg.boxes.filter((b) => /^tiny/.test(b.n.name)).length,
				big: fg.boxes.filter((b) => b.n.name === 'big').length };
		});
		facts.errors = errors;
		facts.requests = requests.filter((u) => !u.startsWith(url.split('/').slice(0, 3).join('/')));
		void more;
		return facts;
	} finally {
		await close();
	}
});
