// flamegraph-js-check.mjs - runs the flame graph's embedded script in jsdom
// and drives it as a user would: click a frame to zoom, check its ancestors
// span the width and unrelated frames hide, search and read the matched
// share, reset zoom and search, hover for the details line.
//
// usage: node flamegraph-js-check.mjs SVG NODE_PREFIX
// Exits 77 (skip) when jsdom is not installed under NODE_PREFIX.
import { readFileSync } from 'node:fs';
import { check, finish, requireOrSkip } from './harness.mjs';

const [file, prefix] = process.argv.slice(2);
const { JSDOM } = requireOrSkip(prefix, 'jsdom');
const dom = new JSDOM(readFileSync(file, 'utf8'), { contentType: 'image/svg+xml',
	runScripts: 'outside-only' });
const w = dom.window, d = w.document;
// jsdom runs no <script> inside SVG documents: evaluate it as a browser would
w.eval(d.getElementsByTagName('script')[0].textContent);
w.init();
const frames = [...d.getElementById('frames').getElementsByTagName('g')];
const title = (g) => g.getElementsByTagName('title')[0].textContent;
const rect = (g) => g.getElementsByTagName('rect')[0];
const cls = (g) => g.getAttribute('class') || '';
const find = (re) => frames.filter((g) => re.test(title(g)));
const width = +d.documentElement.getAttribute('width');

// fixtures/base.prof: conv2d_forward under LINEAR PASS has gemm_kernel as its only child
const [conv] = find(/^conv2d_forward \(/);
const x0 = rect(conv).getAttribute('x');
conv.dispatchEvent(new w.MouseEvent('click', { bubbles: true }));
check(+rect(conv).getAttribute('x') === 10 && +rect(conv).getAttribute('width') === width - 20,
	'the clicked frame spans the graph');
const [root] = find(/^all \(/);
check(cls(root).includes('parent') && +rect(root).getAttribute('width') === width - 20,
	'its ancestors span the graph, faded');
check(find(/^worker_loop/).every((g) => cls(g).includes('hide')), 'unrelated frames are hidden');
const gemm = find(/^gemm_kernel/);
check(gemm.filter((g) => !cls(g).includes('hide')).length === 1, 'one gemm_kernel stays: the child');
check(!d.getElementById('unzoom').getAttribute('class').includes('hide'), 'Reset Zoom shows');
w.search('^gemm');
check(/^Matched: 42\.5%$/.test(d.getElementById('matched').textContent),
	'matched share of gemm_kernel: ' + d.getElementById('matched').textContent);
check(gemm.every((g) => rect(g).getAttribute('fill') === 'rgb(230,0,230)'), 'matches highlighted');
w.unzoom();
check(rect(conv).getAttribute('x') === x0, 'reset zoom restores the layout');
check(frames.every((g) => !cls(g).includes('hide')), 'every frame shows again');
w.resetSearch();
check(d.getElementById('matched').textContent.trim() === '', 'search reset');
check(gemm.every((g) => rect(g).getAttribute('fill') !== 'rgb(230,0,230)'), 'colours restored');
const [worker] = find(/^worker_loop/);
worker.dispatchEvent(new w.MouseEvent('mouseover', { bubbles: true }));
check(d.getElementById('details').textContent === 'worker_loop (16.000ms, 10.96%)',
	'hover details: ' + d.getElementById('details').textContent);
finish('flamegraph-js-check', `${frames.length} frames`);
