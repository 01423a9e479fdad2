// gui.js - times the report page's interactions in Chromium, for
// tools/bench/bench-gui.sh:  node gui.js URL
//
// Each interaction is run in the page and timed from the event to the end
// of the layout it causes (performance.now() around a synchronous click,
// then a forced layout); the page load is timed from navigation to the
// report drawn.  Prints one JSON object: {name: milliseconds}.
'use strict';
const path = require('path');
const { launch } = require(path.join(__dirname, '..', '..', 'tests', 'present', 'browser', 'lib'));

/* From the event to the flamegraph drawn whole (its deeper rows come in
 * later draws when they cost more than one draw may spend), and the
 * tables a range updates after it (report.js's settling). */
async function whole(page, fn) {
	return page.evaluate((src) => new Promise((resolve) => {
		const t = performance.now();
		new Function(src)();
		void document.body.offsetHeight;
		(function wait() {
			if (Memtrace.report.flame.pending || Memtrace.report.settling)
				setTimeout(wait, 0);
			else
				resolve(performance.now() - t);
		})();
	}), fn);
}

async function timed(page, fn, arg) {
	return page.evaluate(([src, a]) => {
		const f = new Function('a', src);
		const t = performance.now();
		f(a);
		void document.body.offsetHeight; /* the layout it causes */
		return performance.now() - t;
	}, [fn, arg]);
}

(async () => {
	const url = process.argv[2];
	const { ctx, close } = await launch();
	const out = {};
	try {
		const page = ctx.pages()[0] || await ctx.newPage();
		const t0 = Date.now();
		await page.goto(url.includes('://') ? url : 'file://' + path.resolve(url));
		await page.waitForFunction(() => window.Memtrace && Memtrace.report && Memtrace.report.functions,
			null, { timeout: 600000 });
		await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
		out.load = Date.now() - t0;
		out.sort_sites = await timed(page, "document.querySelector('table.sites th[data-key=allocations] button').click()");
		out.sort_sites_again = await timed(page, "document.querySelector('table.sites th[data-key=allocations] button').click()");
		out.filter_sites = await timed(page, "const i = document.querySelector('.tbl-filter'); i.value = 'a_3'; i.dispatchEvent(new Event('input'))");
		out.unfilter_sites = await timed(page, "const i = document.querySelector('.tbl-filter'); i.value = ''; i.dispatchEvent(new Event('input'))");
		out.show_all_sites = await timed(page, "document.querySelector('.tbl-more button:not([hidden])').click()");
		out.scroll_sites = await timed(page, "const s = document.querySelector('.tbl-scroll'); s.scrollTop = s.scrollHeight / 2; s.dispatchEvent(new Event('scroll'))");
		out.open_stack = await timed(page, "document.querySelector('table.sites tbody tr.site').click()");
		out.flame_zoom = await timed(page, "const f = Memtrace.report.flame; const b = f.boxes.find((x) => x.row === 3 && x.w > 20); f.zoom(b.n)");
		out.flame_reset = await timed(page, "Memtrace.report.flame.zoom(null)");
		out.flame_weight = await timed(page, "Memtrace.report.flame.setWeight('allocations')");
		out.flame_invert_early = await timed(page, "document.querySelector('.fg-invert').click()");
		out.flame_invert_back = await timed(page, "document.querySelector('.fg-invert').click()");
		/* once the page has had a moment */
		await page.reload();
		await page.waitForFunction(() => window.Memtrace && Memtrace.report && Memtrace.report.flame.root,
			null, { timeout: 600000 });
		await page.waitForTimeout(1000);
		out.flame_invert = await timed(page, "document.querySelector('.fg-invert').click()");
		await page.evaluate(() => new Promise((r) => setTimeout(r, 500)));
		out.flame_invert_back2 = await timed(page, "document.querySelector('.fg-invert').click()");
		/* a new set of sites (the html report's range, below, makes one):
		 * inverted, to the last row */
		out.flame_invert_whole = await whole(page, "const f = Memtrace.report.flame; f.setSites(f.sites.slice()); " +
			"document.querySelector('.fg-invert').click()");
		out.sort_functions = await timed(page, "document.querySelector('table.functions th[data-key=\"self.allocations\"] button').click()");
		out.select_function = await timed(page, "document.querySelector('table.functions tbody tr.function').click()");
		/* a range dragged across the chart of the html report: every view
		 * follows it in the page (the GUI asks the server instead) */
		if (!(await page.evaluate(() => !!Memtrace.gui))) {
			out.brush_range = await timed(page, "const c = Memtrace.report.chart, n = c.proc.timeline.heap_bytes.length; " +
				"c.zoom([Math.floor(n * 0.2), Math.floor(n * 0.5)]); c.onBrush([c.range[0] * c.proc.timeline.bucket_s, c.range[1] * c.proc.timeline.bucket_s])");
			out.brush_whole = await timed(page, "document.querySelector('.chart-reset').click()");
			out.brush_range_all = await whole(page, "const c = Memtrace.report.chart, n = c.proc.timeline.heap_bytes.length; " +
				"c.zoom([Math.floor(n * 0.3), Math.floor(n * 0.6)]); c.onBrush([c.range[0] * c.proc.timeline.bucket_s, c.range[1] * c.proc.timeline.bucket_s])");
		}
		out.process_rows = await page.evaluate(() => document.querySelectorAll('table.sites:not(.functions) tbody tr').length);
	} finally {
		await close();
	}
	process.stdout.write(JSON.stringify(out) + '\n');
})().catch((e) => { process.stderr.write(String(e && e.stack || e) + '\n'); process.exit(2); });
