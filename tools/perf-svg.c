/*
 * `--svg FILE`: bandwidth and latency against message size as a plain,
 * hand-written SVG (no library): two panels, log2 x axis, linear y axis
 * from 0, one polyline per series.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "perf.h"
#include "tools.h"

#define PANEL_W 460
#define PANEL_H 340
#define MARGIN_L 64
#define MARGIN_B 48
#define MARGIN_T 36

static void short_size(double b, char *buf, size_t len)
{
	if (b >= 1048576)
		snprintf(buf, len, "%gM", b / 1048576);
	else if (b >= 1024)
		snprintf(buf, len, "%gK", b / 1024);
	else
		snprintf(buf, len, "%g", b);
}

static double nice_max(double v)
{
	double p, m;

	if (!(v > 0))
		return 1;
	p = pow(10, floor(log10(v)));
	m = v / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void panel(FILE *f, int ox, const char *ytitle, const struct svg_series *s, int n)
{
	double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
	int pw = PANEL_W - MARGIN_L - 16, ph = PANEL_H - MARGIN_T - MARGIN_B;

	for (int k = 0; k < n; k++)
		for (int i = 0; i < s[k].n; i++) {
			if (!isfinite(s[k].y[i]))
				continue;
			xmin = fmin(xmin, s[k].x[i]);
			xmax = fmax(xmax, s[k].x[i]);
			ymax = fmax(ymax, s[k].y[i]);
		}
	fprintf(f, "<g transform=\"translate(%d,0)\">\n", ox);
	fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", MARGIN_L, ytitle);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", MARGIN_L,
		MARGIN_T, pw, ph);
	if (!isfinite(xmin)) {
		fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#666\">no data in this run</text>\n</g>\n",
			MARGIN_L + 20, MARGIN_T + ph / 2);
		return;
	}
	double lx0 = log2(xmin), lx1 = log2(xmax) > lx0 ? log2(xmax) : lx0 + 1, ytop = nice_max(ymax * 1.05);
#define PX(x) (MARGIN_L + (log2(x) - lx0) / (lx1 - lx0) * pw)
#define PY(y) (MARGIN_T + ph - (y) / ytop * ph)
	for (int t = 0; t <= 5; t++) {
		double y = ytop * t / 5;
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", MARGIN_L,
			MARGIN_L + pw, PY(y), PY(y));
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n", MARGIN_L - 6,
			PY(y) + 4, y);
	}
	int step = (int)ceil((lx1 - lx0) / 12);
	for (int e = (int)lx0; e <= (int)lx1; e += step ? step : 1) {
		char lab[16];
		short_size(pow(2, e), lab, sizeof(lab));
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
			PX(pow(2, e)), MARGIN_T + ph + 16, lab);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">message size (bytes)</text>\n",
		MARGIN_L + pw / 2, MARGIN_T + ph + 36);
	for (int k = 0; k < n; k++) {
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", s[k].color);
		for (int i = 0; i < s[k].n; i++)
			if (isfinite(s[k].y[i]))
				fprintf(f, "%.1f,%.1f ", PX(s[k].x[i]), PY(s[k].y[i]));
		fprintf(f, "\"/>\n");
		for (int i = 0; i < s[k].n; i++)
			if (isfinite(s[k].y[i]))
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s: %g at %g B</title></circle>\n",
					PX(s[k].x[i]), PY(s[k].y[i]), s[k].color, s[k].label, s[k].y[i], s[k].x[i]);
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>\n", MARGIN_L + 8, MARGIN_T + 8 + 16 * k,
			s[k].color, MARGIN_L + 22, MARGIN_T + 17 + 16 * k, s[k].label);
	}
#undef PX
#undef PY
	fprintf(f, "</g>\n");
}

int svg_write(const char *path, const char *title, const struct svg_series *bw, int n_bw,
	      const struct svg_series *lat, int n_lat)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "rverbs perf: cannot write %s: %s\n", path, strerror(errno));
		return -errno;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<title>%s</title>\n", 2 * PANEL_W, PANEL_H + 24, title);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#444\">%s</text>\n", MARGIN_L, PANEL_H + 16, title);
	panel(f, 0, "bandwidth (Gb/s)", bw, n_bw);
	panel(f, PANEL_W, "latency (\xc2\xb5s)", lat, n_lat);
	fprintf(f, "</svg>\n");
	return fclose(f) == 0 ? 0 : -errno;
}
