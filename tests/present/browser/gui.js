// gui.js - drives the web GUI of `memtrace server` in Chromium:
//   node gui.js BASE_URL PROGRAM SHOTDIR
//
// Loads BASE_URL/, clicks the recording of PROGRAM, and reports (JSON on
// stdout) what the pages show: the list of recordings, the summary's
// figures, the call-site table with its sparklines, the flamegraph before and after a click,
// a site's stack, the same after the filter form is submitted with
// size_min=50000, the export links, what a bad filter says; console errors
// and every request that does not go to BASE_URL.  Screenshots go to
// SHOTDIR/gui-*.png.  tests/present/server/test_gui.py asserts the facts.
'use strict';
const path = require('path');
const { launch, run } = require('./lib');

const rect = (page, name) => page.evaluate((n) => Memtrace.report.flame.rectOf(n), name);

async function ready(page) {
	await page.waitForSelector('body[data-state]', { timeout: 30000 });
	return page.evaluate(() => document.body.dataset.state);
}

async function rows(page) {
	return page.$$eval('table.sites tbody tr.site td.fn .name', (tds) => tds.map((td) => td.textContent));
}

async function figures(page) {
	return page.$$eval('.figure', (fs) => Object.fromEntries(fs.map((f) => [f.dataset.key, {
		value: f.querySelector('.figure-value').textContent,
		sub: f.querySelector('.figure-sub').textContent,
	}])));
}

// Pixels of the flamegraph's canvas that are drawn (not transparent).
async function drawn(page) {
	return page.evaluate(() => {
		const c = document.querySelector('.fg-canvas');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 3; i < d.length; i += 4)
			n += d[i] > 0;
		return n;
	});
}

// Submits the filter form with FIELDS set (the others emptied).
async function filter(page, fields) {
	await page.evaluate(() => { document.body.dataset.state = 'loading'; });
	await page.evaluate((f) => {
		for (const e of document.querySelectorAll('.gui-filters [name]'))
			e.value = e.tagName === 'SELECT' ? 'all' : '';
	}, fields);
	for (const [k, v] of Object.entries(fields))
		await page.locator(`.gui-filters [name=${k}]`).fill(v);
	await page.locator('.gui-filters button[type=submit]').click();
	await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 30000 });
	return page.evaluate(() => document.body.dataset.state);
}

run(async ([base, program, shots]) => {
	const { ctx, close } = await launch();
	try {
		const page = ctx.pages()[0] || await ctx.newPage();
		const errors = [], requests = [], outside = [];
		page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
		page.on('pageerror', (e) => errors.push(String(e)));
		page.on('request', (r) => {
			requests.push(r.url());
			if (!r.url().startsWith(base + '/'))
				outside.push(r.url());
		});
		const facts = {};

		// "/": the recordings
		await page.goto(base + '/');
		facts.listState = await ready(page);
		facts.title = await page.title();
		facts.list = await page.$$eval('table.recordings tbody tr', (trs) => trs.map((tr) => ({
			name: tr.querySelector('a.name').textContent,
			href: tr.querySelector('a.name').getAttribute('href'),
			leaked: tr.querySelector('td[data-key=leaked]').title,
		})));
		await page.screenshot({ path: path.join(shots, 'gui-list.png'), fullPage: true });

		// a click into PROGRAM's recording
		await Promise.all([page.waitForURL(/\/ui\//), page.locator('table.recordings a.name',
			{ hasText: program }).first().click()]);
		facts.url = page.url();
		facts.state = await ready(page);
		facts.pageTitle = await page.title();
		facts.heading = await page.locator('.summary h1').textContent();
		facts.figures = await figures(page);
		// what it opens on (gt-peak: site_b's block is lost), then the
		// call sites by allocated bytes and the flamegraph by them: the
		// choices stay as the filters change
		facts.opened = { rows: await rows(page),
			sort: await page.locator('table.sites th[data-key=leaked_bytes]').getAttribute('aria-sort'),
			weight: await page.locator('.seg-btn.active').getAttribute('data-weight'),
			cards: await page.$$eval('main > section.card', (cs) => cs.map((c) =>
				c.classList.contains('summary') ? 'summary' : (c.querySelector('h2') || {}).textContent)) };
		const byAllocated = async () => {
			await page.locator('.seg-btn[data-weight=bytes]').click();
			await page.locator('table.sites:not(.functions) th[data-key=allocated_bytes] button').click();
		};
		await byAllocated();
		facts.rows = await rows(page);
		facts.sort = await page.locator('table.sites th[data-key=allocated_bytes]').getAttribute('aria-sort');
		facts.chartDrawn = await page.evaluate(() => {
			const c = document.querySelector('.chart-canvas');
			const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			let n = 0;
			for (let i = 3; i < d.length; i += 4)
				n += d[i] > 0;
			return n;
		});
		facts.sparks = await page.$$eval('table.sites tbody tr.site', (trs) => trs.map((tr) => {
			const c = tr.querySelector('td.spark-col canvas');
			if (!c)
				return null;
			const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			let n = 0;
			for (let i = 3; i < d.length; i += 4)
				n += d[i] > 0;
			return n;
		}));
		facts.sparkHead = await page.locator('table.sites th.spark-col').isVisible();
		facts.fields = await page.$$eval('.gui-filters [name]', (es) => es.map((e) => e.name));
		facts.chartLabels = await page.evaluate(() => Memtrace.report.chart.labels);
		facts.resolution = await page.locator('.chart-resolution').textContent();
		facts.links = await page.$$eval('.gui-downloads a', (as) => as.map((a) => a.getAttribute('href')));
		await page.evaluate(() => window.scrollTo(0, 0));
		await page.screenshot({ path: path.join(shots, 'gui-recording.png'), fullPage: true });

		// the flamegraph: drawn, and a click on site_a zooms into it
		const canvas = page.locator('.fg-canvas');
		await canvas.scrollIntoViewIfNeeded();
		facts.flameDrawn = await drawn(page);
		facts.before = { site_a: await rect(page, 'site_a'), all: await rect(page, 'all') };
		const r = facts.before.site_a;
		if (!r)
			throw new Error('no frame site_a drawn');
		await page.mouse.click(r.x + r.w / 2, r.y + r.h / 2);
		facts.after = { site_a: await rect(page, 'site_a'), all: await rect(page, 'all') };
		facts.resetEnabled = await page.locator('.fg-reset').isEnabled();
		await page.mouse.move(0, 0);

		// a click on the first row unfolds its stack
		await page.locator('table.sites tbody tr.site').first().click();
		facts.stack = await page.$$eval('table.sites tr.stack li .name', (ls) => ls.map((l) => l.textContent));

		// single allocations, a page from the server
		const aready = () => page.waitForFunction(() => document.body.dataset.astate &&
			document.body.dataset.astate !== 'loading', null, { timeout: 30000 });
		await page.locator('.alloc-show').click();
		await aready();
		const allocRows = () => page.$$eval('table.allocations tbody tr.alloc', (trs) => trs.map((tr) => [
			Number(tr.querySelector('td[data-v]').dataset.v), tr.querySelector('td.fn .name').textContent]));
		facts.allocs = { state: await page.evaluate(() => document.body.dataset.astate),
			rows: await allocRows(), status: await page.locator('.alloc-status').textContent() };
		await page.selectOption('.alloc-sort', 'size');
		await aready();
		await page.selectOption('.alloc-order', 'dsc');
		await aready();
		facts.allocs.bySize = await allocRows();
		await page.locator('table.allocations tbody tr.alloc').first().click();
		facts.allocs.stack = await page.$$eval('table.allocations tr.stack li .name', (ls) => ls.map((l) => l.textContent));
		await page.locator('.gui-allocations').screenshot({ path: path.join(shots, 'gui-allocations.png') });

		// the filter form
		facts.filteredState = await filter(page, { size_min: '50000' });
		await aready();
		facts.allocsFiltered = await allocRows();
		facts.filtered = {
			url: page.url(),
			rows: await rows(page),
			figures: await figures(page),
			status: await page.locator('.gui-status').textContent(),
			sizeMin: await page.locator('.gui-filters [name=size_min]').inputValue(),
			links: await page.$$eval('.gui-downloads a', (as) => as.map((a) => a.getAttribute('href'))),
			flameDrawn: await drawn(page),
			sparks: await page.locator('table.sites td.spark-col canvas').count(),
			site_a: await rect(page, 'site_a'),
			many_blocks: await rect(page, 'many_blocks'),
		};
		await page.evaluate(() => window.scrollTo(0, 0));
		await page.screenshot({ path: path.join(shots, 'gui-filtered.png'), fullPage: true });

		// a reload keeps the filters: they are in the page's query
		await page.reload();
		facts.reloadState = await ready(page);
		facts.reloaded = { rows: await rows(page), sizeMin: await page.locator('.gui-filters [name=size_min]')
			.inputValue() };
		await byAllocated();

		// everything so far without a console error; a bad regex is
		// answered with a 400, which Chromium logs
		facts.errors = errors.slice();
		facts.badState = await filter(page, { function_regex: '(' });
		facts.bad = { status: await page.locator('.gui-status').textContent(), rows: await rows(page),
			url: page.url(),
			links: await page.$$eval('.gui-downloads a', (as) => as.map((a) => a.getAttribute('href'))) };

		// durations as people write them; "200m" is refused with the forms
		facts.mState = await filter(page, { from: '200m' });
		facts.m = { status: await page.locator('.gui-status').textContent(), url: page.url() };
		facts.msState = await filter(page, { from: '200ms', to: '90%' });
		facts.ms = {
			url: page.url(),
			figures: await figures(page),
			note: await page.locator('main > .note').first().textContent(),
			links: await page.$$eval('.gui-downloads a', (as) => as.map((a) => a.getAttribute('href'))),
		};
		await page.evaluate(() => window.scrollTo(0, 0));
		await page.screenshot({ path: path.join(shots, 'gui-from-200ms.png'), fullPage: true });

		// a server that does not answer is said so, not "Failed to fetch"
		await page.route(base + '/data/**', (r) => r.abort());
		facts.downState = await filter(page, { size_min: '1' });
		facts.down = { status: await page.locator('.gui-status').textContent() };
		await page.unroute(base + '/data/**');

		// a time range dragged across the chart filters every view
		facts.clearState = await filter(page, {});
		const chartBox = await page.locator('.chart-canvas').boundingBox();
		await page.locator('.chart-canvas').scrollIntoViewIfNeeded();
		const xs = await page.evaluate(() => {
			const s = Memtrace.report.chart.s;
			return [s.xt(0.25), s.xt(0.55), s.top, s.bottom];
		});
		const box = await page.locator('.chart-canvas').boundingBox();
		void chartBox;
		await page.evaluate(() => { document.body.dataset.state = 'loading'; });
		await page.mouse.move(box.x + xs[0], box.y + (xs[2] + xs[3]) / 2);
		await page.mouse.down();
		await page.mouse.move(box.x + (xs[0] + xs[1]) / 2, box.y + (xs[2] + xs[3]) / 2, { steps: 4 });
		await page.mouse.move(box.x + xs[1], box.y + (xs[2] + xs[3]) / 2, { steps: 4 });
		await page.mouse.up();
		await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 30000 });
		facts.brushState = await page.evaluate(() => document.body.dataset.state);
		facts.brush = {
			url: page.url(),
			from: await page.locator('.gui-filters [name=from]').inputValue(),
			to: await page.locator('.gui-filters [name=to]').inputValue(),
			figures: await figures(page),
			rows: await rows(page),
			range: await page.evaluate(() => Memtrace.report.chart.range),
			reset: await page.locator('.chart-reset').isEnabled(),
		};
		await page.locator('.chart-canvas').screenshot({ path: path.join(shots, 'gui-brushed.png') });

		// the temporal view: what was live at 0.45 s
		facts.clear2State = await filter(page, {});
		await page.evaluate(() => { document.body.dataset.state = 'loading'; });
		await page.evaluate(() => {
			const s = document.querySelector('.live-at');
			s.value = '0.45';
			s.dispatchEvent(new Event('input'));
		});
		facts.liveLabel = await page.locator('.live-label').textContent();
		await page.locator('.live-go').click();
		await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 30000 });
		facts.live = { state: await page.evaluate(() => document.body.dataset.state), url: page.url(),
			rows: await rows(page), figures: await figures(page) };
		await page.evaluate(() => window.scrollTo(0, 0));
		await page.screenshot({ path: path.join(shots, 'gui-live-at.png'), fullPage: true });

		// an unknown recording: a page that says so, not JSON
		const resp = await page.goto(base + '/ui/9');
		facts.missing = {
			status: resp.status(), type: resp.headers()['content-type'],
			state: await page.evaluate(() => document.body.dataset.state),
			text: await page.locator('.note').textContent(),
			back: await page.locator('a[href="/"]').count(),
		};
		facts.requests = requests;
		facts.outside = outside;
		return facts;
	} finally {
		await close();
	}
});
