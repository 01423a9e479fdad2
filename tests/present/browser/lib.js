// lib.js - what the browser scripts share: Debian's Chromium driven by
// playwright-core, headless, with a fresh profile and nothing that talks to
// the network on its own, and a page that records console errors and every
// request that is not the file itself.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const CHROMIUM = process.env.MEMTRACE_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
	'--disable-background-networking', '--disable-component-update', '--disable-sync'];

async function launch() {
	if (!fs.existsSync(CHROMIUM))
		throw new Error(`${CHROMIUM} is missing: install chromium (tools/setup.sh does)`);
	const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'memtrace-chromium-'));
	const ctx = await chromium.launchPersistentContext(profile, {
		executablePath: CHROMIUM, args: ARGS, headless: true,
		viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1,
	});
	const close = async () => {
		await ctx.close();
		fs.rmSync(profile, { recursive: true, force: true });
	};
	return { ctx, close };
}

// A page of CTX that logs console errors, page errors and requests for
// anything but file: and data: URLs into the returned arrays.
async function watchedPage(ctx) {
	const page = ctx.pages()[0] || await ctx.newPage();
	const errors = [], requests = [];
	page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
	page.on('pageerror', (e) => errors.push(String(e)));
	page.on('request', (r) => {
		const u = r.url();
		if (!u.startsWith('file:') && !u.startsWith('data:'))
			requests.push(u);
	});
	return { page, errors, requests };
}

// Runs MAIN(args) and prints its result as JSON on stdout; a failure of the
// harness itself (no browser, a timeout) exits 2 with the reason on stderr.
function run(main) {
	main(process.argv.slice(2)).then((facts) => {
		process.stdout.write(JSON.stringify(facts, null, 1) + '\n');
	}, (e) => {
		process.stderr.write(`browser script failed: ${e && e.stack || e}\n`);
		process.exit(2);
	});
}

module.exports = { launch, watchedPage, run };
