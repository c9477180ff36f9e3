#include "export/flamegraph.h"
#include "export/folded.h"
#include "export/htab.h"
#include "export/json.h"
#include "export/textfmt.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SP_FG_FRAME_H	  16
#define SP_FG_FONT	  12
#define SP_FG_FONT_W	  0.59 /* average glyph width per font size unit (Verdana) */
#define SP_FG_XPAD	  10
#define SP_FG_YPAD_TOP	  (SP_FG_FONT * 3 + 16) /* title and subtitle */
#define SP_FG_YPAD_BOTTOM (SP_FG_FONT * 2 + 10)

/*
 * The embedded script. Written for this file (not taken from flamegraph.pl):
 * original geometry is kept in data-x/data-w so zoom and reset are exact,
 * and the matched share merges nested matches so a recursive function is
 * not counted twice.
 */
static const char sp_fg_script[] =
    "var W, PAD = 10, fw = 7.08, inverted, frames, details, matched, unzoomBtn,\n"
    "    searchBtn, searching = false;\n"
    "function init() {\n"
    "  var svg = document.documentElement;\n"
    "  W = +svg.getAttribute('width');\n"
    "  inverted = svg.getAttribute('data-inverted') == '1';\n"
    "  frames = document.getElementById('frames');\n"
    "  details = document.getElementById('details');\n"
    "  matched = document.getElementById('matched');\n"
    "  unzoomBtn = document.getElementById('unzoom');\n"
    "  searchBtn = document.getElementById('search');\n"
    "  var gs = frames.getElementsByTagName('g');\n"
    "  for (var i = 0; i < gs.length; i++) {\n"
    "    var r = gs[i].getElementsByTagName('rect')[0];\n"
    "    r.setAttribute('data-x', r.getAttribute('x'));\n"
    "    r.setAttribute('data-w', r.getAttribute('width'));\n"
    "  }\n"
    "  frames.addEventListener('click', function (e) {\n"
    "    var g = frameOf(e.target); if (g) zoom(g); });\n"
    "  frames.addEventListener('mouseover', function (e) {\n"
    "    var g = frameOf(e.target); if (g) details.textContent = titleOf(g); });\n"
    "  frames.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
    "  unzoomBtn.addEventListener('click', unzoom);\n"
    "  searchBtn.addEventListener('click', function () {\n"
    "    if (searching) resetSearch(); else searchPrompt(); });\n"
    "  window.addEventListener('keydown', function (e) {\n"
    "    if ((e.ctrlKey || e.metaKey) && e.keyCode == 70) { e.preventDefault(); searchPrompt(); }\n"
    "    else if (e.keyCode == 27) { resetSearch(); unzoom(); } });\n"
    "}\n"
    "function frameOf(n) {\n"
    "  while (n && n != frames) { if (n.tagName == 'g') return n; n = n.parentNode; }\n"
    "  return null;\n"
    "}\n"
    "function titleOf(g) { return g.getElementsByTagName('title')[0].textContent; }\n"
    "function nameOf(g) { return titleOf(g).replace(/ \\([^()]*\\)$/, ''); }\n"
    "function fit(g) {\n"
    "  var r = g.getElementsByTagName('rect')[0], t = g.getElementsByTagName('text')[0];\n"
    "  var w = +r.getAttribute('width'), name = nameOf(g), n = Math.floor((w - 6) / fw);\n"
    "  t.setAttribute('x', +r.getAttribute('x') + 3);\n"
    "  t.textContent = n < 3 ? '' : name.length <= n ? name : name.substring(0, n - 2) + '..';\n"
    "}\n"
    "function zoom(node) {\n"
    "  var r0 = node.getElementsByTagName('rect')[0];\n"
    "  var x0 = +r0.getAttribute('data-x'), w0 = +r0.getAttribute('data-w'),\n"
    "      y0 = +r0.getAttribute('y'), scale = (W - 2 * PAD) / w0, eps = 1e-6;\n"
    "  var gs = frames.getElementsByTagName('g');\n"
    "  for (var i = 0; i < gs.length; i++) {\n"
    "    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
    "    var x = +r.getAttribute('data-x'), w = +r.getAttribute('data-w'), y = "
    "+r.getAttribute('y');\n"
    "    var outer = inverted ? y <= y0 : y >= y0;\n"
    "    g.classList.remove('hide'); g.classList.remove('parent');\n"
    "    if (outer) {\n"
    "      if (x <= x0 + eps && x + w >= x0 + w0 - eps) {\n"
    "        r.setAttribute('x', PAD); r.setAttribute('width', W - 2 * PAD);\n"
    "        if (g != node) g.classList.add('parent');\n"
    "      } else g.classList.add('hide');\n"
    "    } else if (x >= x0 - eps && x + w <= x0 + w0 + eps) {\n"
    "      r.setAttribute('x', PAD + (x - x0) * scale); r.setAttribute('width', w * scale);\n"
    "    } else g.classList.add('hide');\n"
    "    if (!g.classList.contains('hide')) fit(g);\n"
    "  }\n"
    "  unzoomBtn.classList.remove('hide');\n"
    "  if (searching) search(searching);\n"
    "}\n"
    "function unzoom() {\n"
    "  var gs = frames.getElementsByTagName('g');\n"
    "  for (var i = 0; i < gs.length; i++) {\n"
    "    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
    "    g.classList.remove('hide'); g.classList.remove('parent');\n"
    "    r.setAttribute('x', r.getAttribute('data-x'));\n"
    "    r.setAttribute('width', r.getAttribute('data-w'));\n"
    "    fit(g);\n"
    "  }\n"
    "  unzoomBtn.classList.add('hide');\n"
    "  if (searching) search(searching);\n"
    "}\n"
    "function searchPrompt() {\n"
    "  var term = prompt('Search frames (a regular expression, e.g. ^conv|gemm)', '');\n"
    "  if (term) search(term);\n"
    "}\n"
    "function search(term) {\n"
    "  var re; try { re = new RegExp(term); } catch (e) { alert(e.message); return; }\n"
    "  var gs = frames.getElementsByTagName('g'), spans = [], total = W - 2 * PAD;\n"
    "  for (var i = 0; i < gs.length; i++) {\n"
    "    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
    "    if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n"
    "    if (re.test(nameOf(g))) {\n"
    "      r.setAttribute('fill', 'rgb(230,0,230)');\n"
    "      spans.push([+r.getAttribute('data-x'), +r.getAttribute('data-w')]);\n"
    "    } else r.setAttribute('fill', r.getAttribute('data-fill'));\n"
    "  }\n"
    "  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
    "  var sum = 0, end = -1;\n"
    "  for (var k = 0; k < spans.length; k++) {\n"
    "    var s = spans[k][0], e = s + spans[k][1];\n"
    "    if (s >= end) { sum += e - s; end = e; } else if (e > end) { sum += e - end; end = e; }\n"
    "  }\n"
    "  searching = term;\n"
    "  searchBtn.textContent = 'Reset Search';\n"
    "  matched.textContent = 'Matched: ' + (100 * sum / total).toFixed(1) + '%';\n"
    "}\n"
    "function resetSearch() {\n"
    "  var gs = frames.getElementsByTagName('g');\n"
    "  for (var i = 0; i < gs.length; i++) {\n"
    "    var r = gs[i].getElementsByTagName('rect')[0];\n"
    "    if (r.hasAttribute('data-fill')) r.setAttribute('fill', r.getAttribute('data-fill'));\n"
    "  }\n"
    "  searching = false;\n"
    "  searchBtn.textContent = 'Search';\n"
    "  matched.textContent = ' ';\n"
    "}\n";

/* Writes s as XML character data: escaped, control characters and broken UTF-8 dropped. */
static void sp_xml_str(FILE *out, const char *s, size_t max_bytes)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t used = 0;
	while (*p && used < max_bytes) {
		unsigned char c = *p;
		size_t n = c < 0x80 ? 1 : sp_json_utf8_len(p);
		if (n > 1 && used + n > max_bytes)
			break;
		switch (c) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			/* XML 1.0 forbids most control characters even as references */
			if (c < 0x20 || c == 0x7f)
				putc(' ', out);
			else if (n == 0)
				putc('?', out);
			else
				fwrite(p, 1, n, out);
		}
		p += n ? n : 1;
		used += n ? n : 1;
	}
}

/* How many bytes of name fit in w px, with flamegraph.pl's ".." when cut; 0 if none. */
static size_t sp_fit(const char *name, double w, bool *cut)
{
	double n = floor((w - 6) / (SP_FG_FONT * SP_FG_FONT_W));
	size_t len = strlen(name);
	*cut = false;
	if (n < 3)
		return 0;
	/* counting bytes, not characters: names are almost always ASCII */
	if ((double)len <= n)
		return len;
	*cut = true;
	size_t k = (size_t)n - 2;
	while (k > 0 && ((unsigned char)name[k] & 0xc0) == 0x80)
		k--;
	return k;
}

struct sp_fg {
	const struct sp_flamegraph_opts *o;
	FILE *out;
	struct sp_labels *labels;
	const int *kind_of; /* per label */
	const char *unit;   /* of the weights: the model's kind's */
	double total;	    /* width metric of the whole graph */
	double px_per_unit;
	double min_px;
	unsigned width, height, max_depth;
	bool diff;
	double base_scale, max_delta;
	uint64_t frames_written, frames_elided;
};

static void sp_fg_color(const struct sp_fg *g, const char *name, int kind, double delta, char *out,
			size_t len)
{
	if (g->diff) {
		double r = g->max_delta > 0 ? fabs(delta) / g->max_delta : 0;
		int v = (int)lround(210 * (1 - (r > 1 ? 1 : r)));
		if (delta > 0)
			snprintf(out, len, "rgb(255,%d,%d)", v, v);
		else if (delta < 0)
			snprintf(out, len, "rgb(%d,%d,255)", v, v);
		else
			snprintf(out, len, "rgb(250,250,250)");
		return;
	}
	/* the colour follows the name, so one function has one colour everywhere */
	uint64_t h = sp_hash_str(SP_HASH_SEED, name);
	double v1 = (double)(h & 0xffff) / 65535.0, v2 = (double)((h >> 16) & 0xffff) / 65535.0,
	       v3 = (double)((h >> 32) & 0xffff) / 65535.0;
	int r, gr, b;
	switch (kind) {
	case SP_MFRAME_RANGE: /* user ranges stand out: purple */
		r = 160 + (int)(40 * v1), gr = 110 + (int)(40 * v2), b = 220 + (int)(35 * v3);
		break;
	case SP_MFRAME_PYTHON: /* Python code: blue, the language's own colour */
		r = 70 + (int)(50 * v1), gr = 140 + (int)(50 * v2), b = 215 + (int)(40 * v3);
		break;
	case SP_MFRAME_PROCESS:
	case SP_MFRAME_THREAD:
	case SP_MFRAME_TRUNC:
	case SP_MFRAME_UNWERR:
	case SP_FRAME_UNKNOWN:
	case SP_FRAME_UNNAMED:
		r = gr = b = 180 + (int)(30 * v1);
		break;
	case SP_FRAME_INLINED: /* aqua, like flamegraph.pl's _[i] frames */
		r = 80 + (int)(60 * v1), gr = 190 + (int)(55 * v1), b = 190 + (int)(55 * v1);
		break;
	case SP_FRAME_JIT: /* green, like flamegraph.pl's _[j] frames */
		r = 50 + (int)(60 * v1), gr = 185 + (int)(60 * v2), b = 50 + (int)(60 * v3);
		break;
	default: /* flamegraph.pl's "hot" palette */
		r = 205 + (int)(50 * v3), gr = (int)(230 * v1), b = (int)(55 * v2);
		break;
	}
	snprintf(out, len, "rgb(%d,%d,%d)", r, gr, b);
}

static void sp_fg_amount(const struct sp_fg *g, double v, char *out, size_t len)
{
	if (g->o->metric == SP_METRIC_SAMPLES)
		snprintf(out, len, "%.0f samples", v);
	else
		sp_textfmt_weight(out, len, (uint64_t)llround(v), g->unit);
}

/* One frame: depth 0 is the root ("all"); [start, end) in metric units. */
static void sp_fg_frame(struct sp_fg *g, const char *name, int kind, unsigned depth, double start,
			double end, double base)
{
	double w = (end - start) * g->px_per_unit;
	if (w < g->min_px || w <= 0) {
		g->frames_elided++;
		return;
	}
	g->frames_written++;
	double x = SP_FG_XPAD + start * g->px_per_unit;
	double y = g->o->inverted ? SP_FG_YPAD_TOP + depth * SP_FG_FRAME_H
				  : g->height - SP_FG_YPAD_BOTTOM - (depth + 1) * SP_FG_FRAME_H;
	char color[32], a[SP_TEXTFMT_LEN], b[SP_TEXTFMT_LEN], pct[SP_TEXTFMT_LEN];
	double v = end - start, bscaled = base * g->base_scale;
	sp_fg_color(g, name, kind, v - bscaled, color, sizeof(color));
	FILE *out = g->out;
	fputs("<g><title>", out);
	sp_xml_str(out, name, SIZE_MAX);
	sp_fg_amount(g, v, a, sizeof(a));
	sp_textfmt_share(pct, sizeof(pct), v, g->total);
	if (g->diff) {
		sp_fg_amount(g, bscaled, b, sizeof(b));
		if (bscaled > 0)
			fprintf(out, " (%s, %s; base %s, %+.2f%%)", a, pct, b,
				(v - bscaled) * 100.0 / bscaled);
		else
			fprintf(out, " (%s, %s; base %s, new)", a, pct, b);
	} else {
		fprintf(out, " (%s, %s)", a, pct);
	}
	fprintf(out,
		"</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>", x,
		y, w, SP_FG_FRAME_H - 1, color);
	bool cut;
	size_t fit = sp_fit(name, w, &cut);
	fprintf(out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + SP_FG_FRAME_H - 4.5);
	if (fit) {
		sp_xml_str(out, name, fit);
		if (cut)
			fputs("..", out);
	}
	fputs("</text></g>\n", out);
}

static void sp_fg_header(struct sp_fg *g, const char *title, const char *subtitle)
{
	FILE *out = g->out;
	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
		"\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"onload=\"init()\" data-inverted=\"%d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" "
		"xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n",
		g->width, g->height, g->width, g->height, g->o->inverted ? 1 : 0);
	fputs("<!-- written by stackprof: click a frame to zoom, Ctrl-F or Search to "
	      "highlight -->\n",
	      out);
	fputs("<defs><linearGradient id=\"bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
	      "<stop stop-color=\"#eeeeee\" offset=\"5%\"/>"
	      "<stop stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient></defs>\n",
	      out);
	fprintf(out,
		"<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: %dpx; fill: rgb(0,0,0); }\n"
		"#title { text-anchor: middle; font-size: 17px; }\n"
		"#subtitle { text-anchor: middle; fill: rgb(110,110,110); }\n"
		"#frames g:hover rect { stroke: black; stroke-width: 0.5; cursor: pointer; }\n"
		"#frames text { pointer-events: none; }\n"
		".button { cursor: pointer; }\n"
		".button:hover { text-decoration: underline; }\n"
		".hide { display: none; }\n"
		".parent { opacity: 0.5; }\n"
		"</style>\n",
		SP_FG_FONT);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n", sp_fg_script);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#bg)\"/>\n",
		g->width, g->height);
	fprintf(out, "<text id=\"title\" x=\"%u\" y=\"24\">", g->width / 2);
	sp_xml_str(out, title, SIZE_MAX);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"subtitle\" x=\"%u\" y=\"44\">", g->width / 2);
	sp_xml_str(out, subtitle, 300);
	fputs("</text>\n", out);
	fprintf(out,
		"<text id=\"unzoom\" class=\"button hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n",
		SP_FG_XPAD);
	fprintf(out,
		"<text id=\"search\" class=\"button\" x=\"%u\" y=\"24\" "
		"text-anchor=\"end\">Search</text>\n",
		g->width - SP_FG_XPAD);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n", SP_FG_XPAD,
		g->height - 17);
	fprintf(out, "<text id=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\"> </text>\n",
		g->width - SP_FG_XPAD, g->height - 17);
	fputs("<g id=\"frames\">\n", out);
}

int sp_flamegraph_write(const struct sp_model *m, const struct sp_model *base,
			const struct sp_flamegraph_opts *o, FILE *out)
{
	struct sp_label_opts lo = o->label;
	lo.folded = false;
	struct sp_labels *labels = sp_labels_new(&lo);
	struct sp_folded f;
	int *kind_of = NULL;
	uint32_t *lab = NULL, *path = NULL;
	double *start = NULL, *bstart = NULL;
	char subtitle[512], title_buf[160];
	int err = -ENOMEM;
	sp_folded_init(&f, labels);
	/* the base goes on side 0 and the graph's own profile on side 1 */
	int side = base ? 1 : 0;
	if (!labels || (base && sp_folded_add(&f, base, 0)) || sp_folded_add(&f, m, side) ||
	    sp_folded_sort(&f))
		goto out;

	size_t n_labels = sp_labels_count(labels);
	kind_of = calloc(n_labels + 1, sizeof(*kind_of));
	if (!kind_of)
		goto out;
	for (int k = 0; k < 2; k++) {
		const struct sp_model *mm = k ? m : base;
		if (!mm)
			continue;
		free(lab);
		lab = sp_labels_map(labels, mm);
		if (!lab)
			goto out;
		for (size_t i = 0; i < mm->n_frames; i++)
			kind_of[lab[i]] = mm->frames[i].kind;
	}

	struct sp_fg g = {.o = o, .out = out, .labels = labels, .kind_of = kind_of};
	g.diff = base != NULL;
	g.unit = sp_model_unit(m);
	g.width = o->width ? o->width : 1200;
	bool samples = o->metric == SP_METRIC_SAMPLES;
	double tot[2] = {samples ? (double)f.total_samples[0] : (double)f.total_ns[0],
			 samples ? (double)f.total_samples[1] : (double)f.total_ns[1]};
	g.total = tot[side];
	g.base_scale = g.diff && o->normalize && tot[0] > 0 ? tot[1] / tot[0] : 1;
	uint32_t max_n = 0;
	for (size_t i = 0; i < f.n_stacks; i++) {
		const struct sp_fstack *s = &f.stacks[i];
		double v = samples ? (double)s->samples[side] : (double)s->weight_ns[side];
		if (v > 0 && s->n > max_n)
			max_n = s->n;
		if (g.diff) {
			double b = samples ? (double)s->samples[0] : (double)s->weight_ns[0];
			double d = fabs(v - b * g.base_scale);
			g.max_delta = d > g.max_delta ? d : g.max_delta;
		}
	}
	g.max_depth = max_n;
	g.height = (max_n + 1) * SP_FG_FRAME_H + SP_FG_YPAD_TOP + SP_FG_YPAD_BOTTOM;
	double usable = (double)g.width - 2 * SP_FG_XPAD;
	g.px_per_unit = g.total > 0 ? usable / g.total : 0;
	g.min_px = o->minwidth_pct ? o->minwidth * usable / 100.0 : o->minwidth;

	/* cpu's graph reads as it always did; another kind's names the kind and
	 * its unit ("user (count)", "wall time") in the title, and in the
	 * subtitle as top does ("7 count of user") */
	bool cpu = sp_model_is_cpu(m);
	const char *kind = sp_model_event_name(m);
	const char *title = o->title;
	if (!title) {
		title = g.diff	      ? "Differential Flame Graph"
			: o->inverted ? "Icicle Graph"
				      : "Flame Graph";
		if (!cpu && sp_model_is_timed(m))
			snprintf(title_buf, sizeof(title_buf), "%s: %.64s time", title, kind);
		else if (!cpu)
			snprintf(title_buf, sizeof(title_buf), "%s: %.64s (%.32s)", title, kind,
				 g.unit);
		title = cpu ? title : title_buf;
	}
	const char *sub = o->subtitle;
	if (!sub) {
		const char *cmd = m->prof && m->prof->header.cmdline ? m->prof->header.cmdline : "";
		char t[SP_TEXTFMT_LEN];
		snprintf(subtitle, sizeof(subtitle), "%.300s%s%s %s%.64s in %llu samples", cmd,
			 cmd[0] ? " - " : "",
			 sp_textfmt_weight(t, sizeof(t), m->total_weight_ns, g.unit),
			 cpu ? "CPU" : "of ", cpu ? "" : kind,
			 (unsigned long long)m->total_samples);
		sub = subtitle;
	}
	sp_fg_header(&g, title, sub);

	path = malloc((max_n + 1) * sizeof(*path));
	start = malloc((max_n + 1) * sizeof(*start));
	bstart = malloc((max_n + 1) * sizeof(*bstart));
	if (!path || !start || !bstart)
		goto out;
	/* flamegraph.pl's flow merge over stacks sorted by frames */
	uint32_t depth = 0;
	double x = 0, xb = 0;
	err = 0;
	for (size_t i = 0; i <= f.n_stacks && !err; i++) {
		const struct sp_fstack *s = i < f.n_stacks ? &f.stacks[i] : NULL;
		double v = 0, vb = 0;
		if (s) {
			v = samples ? (double)s->samples[side] : (double)s->weight_ns[side];
			vb = g.diff ? (samples ? (double)s->samples[0] : (double)s->weight_ns[0])
				    : 0;
			if (v == 0 && vb == 0)
				continue;
		}
		const uint32_t *ids = s ? f.ids + s->off : NULL;
		uint32_t n = s ? (s->n < max_n ? s->n : max_n) : 0;
		uint32_t common = 0;
		while (common < depth && common < n && path[common] == ids[common])
			common++;
		while (depth > common) {
			depth--;
			sp_fg_frame(&g, sp_labels_text(labels, path[depth]), kind_of[path[depth]],
				    depth + 1, start[depth], x, xb - bstart[depth]);
		}
		for (; depth < n; depth++) {
			path[depth] = ids[depth];
			start[depth] = x;
			bstart[depth] = xb;
		}
		x += v;
		xb += vb;
		err = sp_textfmt_out_error(out);
	}
	if (!err) {
		sp_fg_frame(&g, "all", SP_MFRAME_THREAD, 0, 0, x, xb);
		fputs("</g>\n", out);
		fprintf(out, "<!-- %llu frames drawn, %llu narrower than %.2f px left out -->\n",
			(unsigned long long)g.frames_written, (unsigned long long)g.frames_elided,
			g.min_px);
		fputs("</svg>\n", out);
		err = sp_textfmt_out_error(out);
	}
out:
	sp_folded_release(&f);
	sp_labels_free(labels);
	free(kind_of);
	free(lab);
	free(path);
	free(start);
	free(bstart);
	return err;
}
