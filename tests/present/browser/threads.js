// threads.js - drives the thread selector of the server's GUI in Chromium:
//   node threads.js URL TID SHOTDIR
//
// Opens URL (a recording's /ui/ID), reads the selector's threads, picks
// TID and reports (JSON on stdout) what every view then shows: the summary's
// figures, the call sites' rows, the functions' inclusive allocations, the
// flamegraph's total in each weight, the chart's allocations per bucket
// summed, the size histogram's bars summed, the single allocations' threads,
// the page's URL and the filter field; then "all threads" again.  Also
// console errors and requests that leave the server.  Screenshots go to
// SHOTDIR/gui-thread*.png.  tests/present/server/test_threads.py asserts
// them against `memtrace report --json --thread TID`.
'use strict';
const path = require('path');
const { launch, watchedPage, run } = require('./lib');

async function views(page) {
	return page.evaluate(() => {
		const num = (s) => Number(String(s).replace(/[^0-9]/g, ''));
		const fig = (k) => num(document.querySelector(`.figure[data-key=${k}] .figure-value`).textContent);
		const r = Memtrace.report, fg = r.flame, tl = r.proc.timeline;
		const sites = {};
		document.querySelectorAll('table.sites:not(.functions):not(.allocations) tbody tr.site').forEach((tr) => {
			const td = tr.querySelectorAll('td');
			sites[tr.querySelector('td.fn .name').textContent] = [num(td[0].title), num(td[1].title)];
		});
		const fns = {};
		document.querySelectorAll('table.functions tbody tr.function').forEach((tr) => {
			const v = Array.from(tr.querySelectorAll('td.num')).map((x) => Number(x.dataset.v));
			fns[tr.dataset.fn] = v[1]; /* inclusive allocations */
		});
		let sizes = 0;
		document.querySelectorAll('table.histo-table tbody tr[data-key^="size-"]').forEach((tr) => {
			sizes += Number(tr.querySelector('td.num').dataset.v);
		});
		return {
			allocations: fig('allocations'), frees: fig('frees'),
			sites: sites, functions: fns, sizes: sizes,
			flame: Memtrace.weights.map((w, i) => fg.root.v[i]),
			flameTotal: document.querySelector('.fg-total').textContent,
			chart: tl.allocations.reduce((a, b) => a + b, 0),
			field: document.querySelector('.gui-filters input[name=thread]').value,
			selected: document.querySelector('.thread-select').value,
			url: location.search,
		};
	});
}

run(async ([url, tid, shots]) => {
	const { ctx, close } = await launch();
	try {
		const { page, errors, requests } = await watchedPage(ctx);
		// leaked as report --thread counts it: every block not freed (the
		// leak-kind selector's "all", after a leak scan; kept as the
		// thread filter changes)
		const allKinds = async () => {
			if (await page.locator('select.leak-kind').first().isVisible())
				await page.selectOption('select.leak-kind >> nth=0', 'all');
		};
		await page.goto(url);
		await page.waitForSelector('body[data-state=ready]');
		await allKinds();
		const facts = {};
		facts.options = await page.$$eval('.thread-select option', (os) => os.map((o) => [o.value, o.textContent]));
		facts.all = await views(page);
		// pick TID: the page is fetched again, filtered by it
		await page.evaluate(() => document.body.removeAttribute('data-state'));
		await page.selectOption('.thread-select', tid);
		await page.waitForSelector('body[data-state=ready]');
		facts.one = await views(page);
		// a frame's tooltip, and the summary: nothing reads "null"
		await page.locator('.fg-canvas').scrollIntoViewIfNeeded();
		const r = await page.evaluate(() => Memtrace.report.flame.rectOf('worker'));
		if (r) {
			await page.mouse.move(r.x + r.w / 2, r.y + r.h / 2);
			facts.tip = await page.locator('.fg .tip').textContent();
		}
		facts.summary = await page.locator('.card.summary').textContent();
		await page.evaluate(() => window.scrollTo(0, 0));
		await page.screenshot({ path: path.join(shots, 'gui-thread.png'), fullPage: false });
		await page.locator('.alloc-show').click();
		await page.waitForSelector('body[data-astate=ready]');
		facts.allocationThreads = await page.$$eval('table.allocations tbody tr.alloc',
			(trs) => Array.from(new Set(trs.map((tr) => tr.querySelectorAll('td')[6].textContent))));
		facts.allocationStatus = await page.locator('.alloc-status').textContent();
		const fg = page.locator('.card:has(.fg)');
		await fg.scrollIntoViewIfNeeded();
		await fg.screenshot({ path: path.join(shots, 'gui-thread-flamegraph.png') });
		// a reload keeps it (the URL says it)
		await page.reload();
		await page.waitForSelector('body[data-state=ready]');
		facts.reloaded = await page.locator('.thread-select').inputValue();
		await allKinds();
		// and all threads again
		await page.evaluate(() => document.body.removeAttribute('data-state'));
		await page.selectOption('.thread-select', '');
		await page.waitForSelector('body[data-state=ready]');
		facts.back = await views(page);
		facts.errors = errors;
		facts.requests = requests.filter((u) => !u.startsWith(url.split('/').slice(0, 3).join('/')));
		return facts;
	} finally {
		await close();
	}
});
