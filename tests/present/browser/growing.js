// growing.js - the server's page of a recording still being written, in
// Chromium:
//   node growing.js BASE_URL GOFILE SHOT
//
// Opens BASE_URL/ui/0 while tests/present/server/phases.c waits between its
// two phases, notes the allocations the page shows (the report it drew),
// then creates GOFILE (the program goes on and ends) and waits for the page
// to draw the recording again on its own, as the server loads the grown
// file.  Prints the facts as JSON; test_growing.py asserts them.
'use strict';
const fs = require('fs');
const { launch, run } = require('./lib');

function allocations() {
	const r = window.Memtrace && Memtrace.report;
	const p = r && r.data && r.data.processes[0];
	return p ? p.totals.allocations : null;
}

run(async ([base, go, shot]) => {
	const { ctx, close } = await launch();
	try {
		const page = ctx.pages()[0] || await ctx.newPage();
		const facts = {};
		await page.goto(base + '/ui/0');
		await page.waitForSelector('body[data-state]', { timeout: 60000 });
		facts.state = await page.evaluate(() => document.body.dataset.state);
		facts.first = await page.evaluate(allocations);
		fs.writeFileSync(go, '');
		// the page asks /list every 2 s while the file grows, and draws it
		// again when its generation changes: no reload from here
		await page.waitForFunction(() => {
			const r = window.Memtrace && Memtrace.report;
			const p = r && r.data && r.data.processes[0];
			return p && p.totals.allocations === 400;
		}, null, { timeout: 90000 }).catch(() => {});
		facts.last = await page.evaluate(allocations);
		await page.screenshot({ path: shot, fullPage: true });
		return facts;
	} finally {
		await close();
	}
});
