// console.js - drives the query console of the server's GUI in Chromium:
//   node console.js BASE_URL SHOTDIR
//
// Opens BASE_URL/ui/0 (gt-peak) and reports (JSON on stdout) what the
// console shows: a statement's table, its CSV link (fetched), a bad and a
// refused statement, a condition shown as the report ("Show as
// flamegraph": call sites, flamegraph, page query) and as the allocation
// list; then a runaway statement typed in the console while another page
// asks for the summary: the order in which they end, and what the console
// says.  tests/present/server/test_query.py asserts the facts.
'use strict';
const path = require('path');
const { launch, run } = require('./lib');

async function ready(page) {
	await page.waitForSelector('body[data-state]', { timeout: 30000 });
	return page.evaluate(() => document.body.dataset.state);
}

// Types SQL into the console, runs it, waits for its answer.
async function runSQL(page, sql) {
	await page.locator('.gui-sql').fill(sql);
	await page.locator('.gui-run').click();
	await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.qstate), null,
		{ timeout: 60000 });
	return shown(page);
}

async function shown(page) {
	return page.evaluate(() => ({
		state: document.body.dataset.qstate,
		status: document.querySelector('.gui-qstatus').textContent,
		columns: [...document.querySelectorAll('.gui-qtable thead th')].map((th) => th.textContent),
		rows: [...document.querySelectorAll('.gui-qtable tbody tr')].map((tr) =>
			[...tr.querySelectorAll('td')].map((td) => td.textContent)),
	}));
}

run(async ([base, shots]) => {
	const { ctx, close } = await launch();
	try {
		const page = ctx.pages()[0] || await ctx.newPage();
		const outside = [];
		page.on('request', (r) => { if (!r.url().startsWith(base + '/')) outside.push(r.url()); });
		const facts = {};
		await page.goto(base + '/ui/0');
		facts.state = await ready(page);
		// the flamegraph and the call sites by allocated bytes (the page
		// opens on gt-peak's leak; the choice stays as the filters change)
		await page.locator('.seg-btn[data-weight=bytes]').click();
		await page.locator('table.sites:not(.functions) th[data-key=allocated_bytes] button').click();
		facts.hasConsole = await page.locator('.gui-console').count();

		facts.leaks = await runSQL(page, 'SELECT count(*) AS n, sum(size) AS bytes FROM allocations ' +
			'WHERE free_s IS NULL');
		facts.csvHref = await page.locator('.gui-csv').getAttribute('href');
		facts.csv = await page.evaluate((h) => fetch(h).then((r) => r.text()), facts.csvHref);
		await page.screenshot({ path: path.join(shots, 'console-table.png'), fullPage: true });
		facts.bad = await runSQL(page, 'SELEC 1');
		facts.refused = await runSQL(page, 'DELETE FROM sites');

		// a condition shown as the report, then as the list of allocations
		await page.locator('.gui-where').fill('size >= 50000');
		await page.evaluate(() => { document.body.dataset.state = 'loading'; });
		await page.locator('.gui-as-flame').click();
		await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 30000 });
		facts.asReport = {
			state: await page.evaluate(() => document.body.dataset.state),
			url: page.url(),
			rows: await page.$$eval('table.sites tbody tr.site td.fn .name', (tds) => tds.map((td) => td.textContent)),
			whereField: await page.locator('.gui-filters [name=where]').inputValue(),
			site_a: await page.evaluate(() => Memtrace.report.flame.rectOf('site_a')),
			many_blocks: await page.evaluate(() => Memtrace.report.flame.rectOf('many_blocks')),
			links: await page.$$eval('.gui-downloads a', (as) => as.map((a) => a.getAttribute('href'))),
		};
		await page.evaluate(() => { document.body.dataset.qstate = ''; });
		await page.locator('.gui-as-list').click();
		await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.qstate), null,
			{ timeout: 60000 });
		facts.asList = await shown(page);
		await page.screenshot({ path: path.join(shots, 'console-list.png'), fullPage: true });

		// a runaway statement; meanwhile another page asks for the summary
		const order = [];
		const other = await ctx.newPage();
		await other.goto(base + '/');
		const runaway = runSQL(page, 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) ' +
			'SELECT count(*) FROM c').then((r) => { order.push('runaway'); return r; });
		await page.waitForFunction(() => document.body.dataset.qstate === 'running', null, { timeout: 30000 });
		await other.waitForTimeout(500);
		facts.summaryStatus = await other.evaluate((u) => fetch(u).then((r) => r.status), base + '/data/0/summary');
		order.push('summary');
		facts.runaway = await runaway;
		facts.order = order;
		facts.outside = outside;
		return facts;
	} finally {
		await close();
	}
});
