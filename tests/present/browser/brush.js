// brush.js - drags across the chart of an HTML report (`memtrace export
// --format html`) in Chromium and reports what every view then shows:
//   node brush.js PAGE FROM TO SHOTDIR [TID]
//
// FROM and TO are fractions of the chart's plot width.  Reports (JSON on
// stdout): the range the page selected (seconds, on its grid), the
// summary's figures, the flamegraph's totals in each weight, the call
// sites' rows and the functions' inclusive allocations, the page's note;
// then the same after "Whole run", and with TID, after picking that thread
// in the page's bar (and the selector's options).  Also console errors and requests that
// leave the page.  Screenshots go to SHOTDIR/html-brush*.png (without TID)
// or SHOTDIR/html-thread-summary.png.
// tests/present/export/test_brush.py asserts them against `memtrace report
// --json --from --to`.
'use strict';
const path = require('path');
const { launch, watchedPage, run } = require('./lib');

async function views(page) {
	return page.evaluate(() => {
		const num = (s) => Number(String(s).replace(/[^0-9]/g, ''));
		const fig = (k) => num(document.querySelector(`.figure[data-key=${k}] .figure-value`).title ||
			document.querySelector(`.figure[data-key=${k}] .figure-value`).textContent);
		const sub = (k) => num(document.querySelector(`.figure[data-key=${k}] .figure-sub`).textContent.split(' in ')[0]);
		const r = Memtrace.report;
		const sites = {};
		document.querySelectorAll('table.sites:not(.functions) tbody tr.site').forEach((tr) => {
			const td = tr.querySelectorAll('td');
			const n = tr.querySelector('td.fn .name').textContent, a = sites[n] || [0, 0, 0, 0];
			sites[n] = [a[0] + num(td[0].title), a[1] + num(td[1].title), a[2] + num(td[2].title.split(' in ')[0]),
				a[3] + num(td[4].title)];
		});
		const fns = {};
		document.querySelectorAll('table.functions tbody tr.function').forEach((tr) => {
			const v = Array.from(tr.querySelectorAll('td.num')).map((x) => Number(x.dataset.v));
			fns[tr.dataset.fn] = [v[1], v[3], v[5]]; /* inclusive allocations, bytes, leaked bytes */
		});
		const note = document.querySelector('.range-note');
		return {
			range: r.range, allocations: fig('allocations'), allocated: sub('allocated'), leaked: sub('leaked'),
			temporary: fig('temporary'), flame: Memtrace.weights.map((w, i) => r.flame.root.v[i]),
			sites: sites, functions: fns, note: note ? note.textContent : null,
			chartRange: r.chart.range,
		};
	});
}

run(async ([url, from, to, shots, tid]) => {
	const { ctx, close } = await launch();
	try {
		const { page, errors, requests } = await watchedPage(ctx);
		await page.goto('file://' + path.resolve(url));
		await page.waitForFunction(() => window.Memtrace && Memtrace.report && Memtrace.report.chart.s);
		const facts = { before: await views(page) };
		facts.threadList = await page.evaluate(() => {
			const e = document.querySelector('.thread-list');
			return e ? [e.textContent, e.title] : null;
		});
		const canvas = page.locator('.chart-canvas').first();
		await canvas.scrollIntoViewIfNeeded();
		const box = await canvas.boundingBox();
		const s = await page.evaluate(() => { const c = Memtrace.report.chart.s; return { left: c.left, right: c.right }; });
		const x = (f) => box.x + s.left + (s.right - s.left) * Number(f);
		const y = box.y + box.height / 2;
		await page.mouse.move(x(from), y);
		await page.mouse.down();
		await page.mouse.move((x(from) + x(to)) / 2, y);
		await page.mouse.move(x(to), y);
		await page.mouse.up();
		// the tables below the flamegraph follow once the event is answered
		const settled = () => page.waitForFunction(() => !Memtrace.report.settling && !Memtrace.report.flame.pending);
		await settled();
		facts.brushed = await views(page);
		await page.mouse.move(1, 1);
		if (!tid) {
			await page.locator('.card:has(.chart-canvas)').screenshot({ path: path.join(shots, 'html-brush.png') });
			await page.locator('.card.summary').screenshot({ path: path.join(shots, 'html-brush-summary.png') });
		}
		if (facts.brushed.range) { /* else the drag selected nothing: the test says so */
			await page.locator('.chart-reset').click();
			await settled();
		}
		facts.whole = await views(page);
		if (tid) {
			facts.threadOptions = await page.$$eval('.thread-select option', (os) => os.map((o) => o.value));
			await page.selectOption('.thread-select', tid);
			await settled();
			facts.thread = await views(page);
			await page.locator('.card.summary').screenshot({ path: path.join(shots, 'html-thread-summary.png') });
			// a range then replaces the thread
			await canvas.scrollIntoViewIfNeeded();
			const b2 = await canvas.boundingBox();
			const x2 = (f) => b2.x + s.left + (s.right - s.left) * Number(f), y2 = b2.y + b2.height / 2;
			await page.mouse.move(x2(from), y2);
			await page.mouse.down();
			await page.mouse.move(x2(to), y2);
			await page.mouse.up();
			await settled();
			facts.threadAfterRange = await page.locator('.thread-select').inputValue();
		}
		facts.errors = errors;
		facts.requests = requests;
		return facts;
	} finally {
		await close();
	}
});
