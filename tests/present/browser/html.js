// html.js - drives a page of `memtrace export --format html` in Chromium:
//   node html.js FILE.html CLICK CHILD SCREENSHOT.png [PID]
//
// Reports (JSON on stdout) what the page shows and how it answers: console
// errors and requests for anything but the file, the summary's figures, how
// much of the chart is drawn, the widths of the flamegraph frames CLICK and
// CHILD before and after a click on CLICK, the flamegraph's total under
// each weight, the first rows of the call-site table as its headers are
// clicked, the share a search matches, the process selector.
// tests/present/export/test_html.py asserts them.
'use strict';
const path = require('path');
const { launch, watchedPage, run } = require('./lib');

const rect = (page, name) => page.evaluate((n) => Memtrace.report.flame.rectOf(n), name);

async function firstRows(page) {
	return page.$$eval('table.sites tbody tr.site td.fn .name',
		(tds) => tds.slice(0, 3).map((td) => td.textContent));
}

run(async ([file, click, child, shot, pid]) => {
	const { ctx, close } = await launch();
	try {
		const { page, errors, requests } = await watchedPage(ctx);
		await page.goto('file://' + path.resolve(file));
		await page.waitForFunction(() => window.Memtrace && Memtrace.report);
		const facts = { title: await page.title() };
		facts.heading = await page.locator('.summary h1').textContent();
		facts.figures = await page.$$eval('.figure', (fs) => Object.fromEntries(fs.map((f) => [f.dataset.key, {
			value: f.querySelector('.figure-value').textContent,
			sub: f.querySelector('.figure-sub').textContent,
		}])));

		// the chart: pixels drawn, and those of the heap's blue; then in
		// the process memory view, those of resident memory's line too
		const chartFacts = () => page.evaluate(() => {
			const c = document.querySelector('.chart-canvas');
			const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			let drawn = 0, heap = 0, rss = 0, mapped = 0;
			for (let i = 0; i < d.length; i += 4) {
				if (d[i + 3] > 0)
					drawn++;
				if (d[i + 3] > 0 && d[i + 2] > 150 && d[i] < 120)
					heap++;
				// resident memory's line: #bc4c00.  A line 1.5 pixels wide
				// whose value falls on a pixel's edge covers two rows at
				// three quarters (alpha 191): counted, where a 200 floor
				// made the count depend on the value sampled
				if (d[i + 3] > 150 && d[i] > 160 && d[i + 1] > 50 && d[i + 1] < 110 && d[i + 2] < 40)
					rss++;
				// mapped memory's line: #1b7c83
				if (d[i + 3] > 150 && d[i] < 60 && d[i + 1] > 100 && d[i + 1] < 150 && d[i + 2] > 110 && d[i + 2] < 160)
					mapped++;
			}
			const keys = [...document.querySelectorAll('.legend .key')]
				.filter((k) => k.style.display !== 'none' && !k.hidden).map((k) => k.textContent);
			return { width: c.width, height: c.height, drawn, heap, rss, mapped, keys };
		});
		facts.chart = await chartFacts();
		const mode = page.locator('.chart-mode');
		facts.modeShown = await mode.isVisible();
		if (facts.modeShown) {
			await mode.click();
			facts.processChart = await chartFacts();
			await page.locator('.chart').screenshot({ path: shot.replace(/\.png$/, '-memory.png') });
			await mode.click();
		}

		// what the page opened on; then the flamegraph by allocated bytes
		facts.opened = await page.evaluate(() => ({ weight: Memtrace.weights[Memtrace.report.flame.wi].name,
			sort: Memtrace.report.table.key }));
		await page.locator('.seg-btn[data-weight=bytes]').click();

		// the flamegraph: zoom by a real click on the canvas
		const canvas = page.locator('.fg-canvas');
		await canvas.scrollIntoViewIfNeeded();
		facts.before = { click: await rect(page, click), child: await rect(page, child) };
		const r = facts.before.click;
		if (!r)
			throw new Error(`no frame ${click} drawn`);
		await page.mouse.move(r.x + r.w / 2, r.y + r.h / 2);
		facts.details = await page.locator('.fg-details').textContent();
		facts.tip = await page.locator('.fg-wrap .tip').isVisible();
		await page.mouse.click(r.x + r.w / 2, r.y + r.h / 2);
		facts.after = { click: await rect(page, click), child: await rect(page, child) };
		facts.resetEnabled = await page.locator('.fg-reset').isEnabled();
		if (facts.resetEnabled)
			await page.locator('.fg-reset').click();
		facts.reset = { click: await rect(page, click), child: await rect(page, child) };

		// each weight: the total, and the widths of the two frames
		facts.weights = {};
		for (const w of ['bytes', 'allocations', 'leaked', 'peak', 'temporary']) {
			await page.locator(`.seg-btn[data-weight=${w}]`).click();
			facts.weights[w] = {
				total: await page.locator('.fg-total').textContent(),
				pressed: await page.locator(`.seg-btn[data-weight=${w}]`).getAttribute('aria-pressed'),
				root: await rect(page, 'all'), click: await rect(page, click),
				child: await rect(page, child),
			};
		}
		await page.locator('.seg-btn[data-weight=bytes]').click();

		await page.locator('.fg-search').fill('^' + click.replace(/[^\w]/g, '\\$&') + '$');
		facts.matched = await page.locator('.fg-matched').textContent();
		await page.locator('.fg-search').fill('');

		// the table, sorted by clicks on its headers
		facts.table = { initial: await firstRows(page) };
		for (const [key, label] of [['allocations', 'allocations'], ['allocated_bytes', 'allocated'],
			['allocated_bytes', 'allocated again'], ['function', 'function']]) {
			await page.locator(`table.sites th[data-key=${key}] button`).click();
			facts.table[label] = {
				rows: await firstRows(page),
				sort: await page.locator(`table.sites th[data-key=${key}]`).getAttribute('aria-sort'),
			};
		}
		await page.locator('table.sites th[data-key=allocated_bytes] button').click();
		await page.locator('table.sites tbody tr.site').first().click();
		facts.stack = await page.$$eval('table.sites tr.stack li .name', (ls) => ls.map((l) => l.textContent));

		// several processes: a selector, on the recorded command's process
		const options = await page.$$eval('.proc-select option', (os) => os.map((o) => o.textContent));
		facts.opensOn = options.length ? await page.$eval('.proc-select', (s) => s.selectedOptions[0].textContent) :
			null;
		facts.state = await page.locator('.summary .meta').textContent();
		facts.processes = [];
		for (let i = 0; i < options.length; i++) {
			await page.selectOption('.proc-select', String(i));
			facts.processes.push({
				option: options[i], heading: await page.locator('.summary h1').textContent(),
				allocations: await page.locator('.figure[data-key=allocations] .figure-value')
					.textContent(),
				total: await page.locator('.fg-total').textContent(),
				rows: await page.locator('table.sites tbody tr.site').count(),
			});
		}
		if (options.length)
			await page.selectOption('.proc-select', '0');

		// the page named with ?pid=PID opens on that process
		if (pid) {
			await page.goto('file://' + path.resolve(file) + '?pid=' + pid);
			await page.waitForFunction(() => window.Memtrace && Memtrace.report);
			facts.pidOpensOn = await page.$eval('.proc-select', (s) => s.selectedOptions[0].textContent);
			facts.pidState = await page.locator('.summary .meta').textContent();
		}

		// the screenshot: the whole page, the first site's stack unfolded
		await page.evaluate(() => window.scrollTo(0, 0));
		await page.mouse.move(0, 0);
		await page.screenshot({ path: shot, fullPage: true });
		facts.errors = errors;
		facts.requests = requests;
		return facts;
	} finally {
		await close();
	}
});
