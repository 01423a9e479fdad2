// svg.js - drives a flamegraph SVG of `memtrace export --format svg` in
// Chromium: node svg.js FILE.svg LEAF PARENT SCREENSHOT.png
//
// Reports (JSON on stdout) the widths of the frames named LEAF and PARENT
// before and after a click on PARENT, after Reset Zoom, what a search for
// LEAF says, the details line when LEAF is hovered, console errors and
// requests for anything but the file; tests/present/export/test_svg.py asserts them.
'use strict';
const path = require('path');
const { launch, watchedPage, run } = require('./lib');

async function widths(page) {
	return page.evaluate(() => {
		const out = {};
		for (const g of document.querySelectorAll('g.f')) {
			const name = g.querySelector('title').textContent.split('\n')[0];
			const hidden = getComputedStyle(g).display === 'none';
			const w = hidden ? 0 : +g.querySelector('rect').getAttribute('width');
			out[name] = Math.max(out[name] || 0, w);
		}
		return out;
	});
}

async function frame(page, name) {
	const gs = page.locator('g.f').filter({ has: page.locator('title', { hasText: name }) });
	for (let i = 0; i < await gs.count(); i++) {
		const g = gs.nth(i);
		const t = await g.locator('title').textContent();
		if (t.split('\n')[0] === name)
			return g;
	}
	throw new Error(`no frame named ${name}`);
}

run(async ([file, leaf, parent, shot]) => {
	const { ctx, close } = await launch();
	try {
		const { page, errors, requests } = await watchedPage(ctx);
		await page.goto('file://' + path.resolve(file));
		const facts = { before: await widths(page) };
		facts.full = await page.evaluate(() => +document.documentElement.getAttribute('data-width'));
		await (await frame(page, leaf)).hover();
		facts.details = await page.locator('#details').textContent();
		await (await frame(page, parent)).locator('rect').click();
		facts.zoomed = await widths(page);
		facts.unzoomVisible = await page.locator('#unzoom').isVisible();
		if (facts.unzoomVisible)
			await page.locator('#unzoom').click();
		facts.reset = await widths(page);
		page.once('dialog', (d) => d.accept('^' + leaf.replace(/[^\w]/g, '\\$&') + '$'));
		await page.locator('#search').click();
		await page.waitForFunction(() => document.getElementById('matched').textContent.trim());
		facts.matched = await page.locator('#matched').textContent();
		facts.highlighted = await page.locator('g.f.match').count();
		// the SVG's own size: a full-page screenshot of an SVG document never ends
		const size = await page.evaluate(() => ['width', 'height'].map(
			(k) => +document.documentElement.getAttribute(k)));
		await page.setViewportSize({ width: size[0], height: size[1] });
		await page.screenshot({ path: shot });
		facts.errors = errors;
		facts.requests = requests;
		return facts;
	} finally {
		await close();
	}
});
