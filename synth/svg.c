/* SPDX-License-Identifier: BSD-3-Clause */
/* SVG pictures of simulations: link-load heat map and utilization over time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* Writes text with XML special characters escaped. */
static void put_text(FILE *f, const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

/* 0..1 -> a dark-blue .. green .. yellow ramp (viridis-like). */
static void ramp(double x, int *r, int *g, int *b)
{
    static const int stops[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98},
                                    {253, 231, 37}};
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    double p = x * 4;
    int i = p >= 4 ? 3 : (int)p;
    double f = p - i;
    *r = (int)lround(stops[i][0] + f * (stops[i + 1][0] - stops[i][0]));
    *g = (int)lround(stops[i][1] + f * (stops[i + 1][1] - stops[i][1]));
    *b = (int)lround(stops[i][2] + f * (stops[i + 1][2] - stops[i][2]));
}

/* Opens path and writes the SVG header, white background and title. */
static FILE *start(const char *path, double w, double h, const char *title)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        tacos_error(TACOS_ERR_IO, "%s: cannot open for writing", path);
        return NULL;
    }
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">",
            w, h, w / 2);
    put_text(f, title);
    fputs("</text>\n", f);
    return f;
}

static int finish(FILE *f, const char *path)
{
    fputs("</svg>\n", f);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    return bad ? tacos_error(TACOS_ERR_IO, "%s: write failed", path) : TACOS_OK;
}

int tacos_svg_heatmap(const tacos_sim_t *r, const tacos_topo_t *net, const char *title,
                      const char *path)
{
    int n = net->npus;
    double cell = fmax(1.0, fmin(24.0, 640.0 / n)), grid = cell * n;
    double left = 70, top = 60, w = left + grid + 130, h = top + grid + 60;
    FILE *f = start(path, w, h, title);
    if (!f)
        return TACOS_ERR_IO;
    fprintf(f, "<g id=\"cells\">\n<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
               "height=\"%.2f\" fill=\"black\"/>\n",
            left, top, grid, grid);
    for (size_t l = 0; l < net->nlinks; l++) {
        const tacos_link_t *lk = &net->links[l];
        int cr, cg, cb;
        ramp(r->time_us > 0 ? r->link_busy_us[l] / r->time_us : 0, &cr, &cg, &cb);
        fprintf(f,
                "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                "fill=\"rgb(%d,%d,%d)\"><title>%d->%d: busy %.3f us, %.0f bytes</title></rect>\n",
                left + lk->dst * cell, top + lk->src * cell, cell, cell, cr, cg, cb, lk->src,
                lk->dst, r->link_busy_us[l], r->link_bytes[l]);
    }
    fputs("</g>\n", f);
    int tick = n <= 16 ? 1 : (n + 7) / 8;
    for (int v = 0; v < n; v += tick) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
                left + (v + 0.5) * cell, top + grid + 16, v);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n", left - 6,
                top + (v + 0.5) * cell + 4, v);
    }
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">destination NPU</text>\n"
            "<text transform=\"translate(20,%.1f) rotate(-90)\" text-anchor=\"middle\">source "
            "NPU</text>\n",
            left + grid / 2, top + grid + 40, top + grid / 2);
    /* legend: colour bar of link busy time as a share of the collective */
    double lx = left + grid + 30, lh = fmin(grid, 240);
    fputs("<g id=\"legend\">\n", f);
    for (int i = 0; i < 20; i++) {
        int cr, cg, cb;
        ramp((19 - i) / 19.0, &cr, &cg, &cb);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"%.2f\" fill=\"rgb(%d,%d,%d)\"/>\n",
                lx, top + i * lh / 20, lh / 20 + 0.5, cr, cg, cb);
    }
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\">100%%</text>\n<text x=\"%.1f\" y=\"%.1f\">0%%</text>\n"
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"12\" fill=\"black\"/>"
            "<text x=\"%.1f\" y=\"%.1f\">no link</text>\n"
            "<text x=\"%.1f\" y=\"%.1f\">link busy</text>\n"
            "<text x=\"%.1f\" y=\"%.1f\">(%% of time)</text>\n</g>\n",
            lx + 20, top + 10, lx + 20, top + lh, lx, top + lh + 14, lx + 20, top + lh + 24,
            lx - 4, top - 20, lx - 4, top - 6);
    return finish(f, path);
}

int tacos_svg_utilization(const tacos_sim_t *const *runs, const char *const *names, int nruns,
                          const char *title, const char *path)
{
    static const char *colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b"};
    enum { BINS = 100 };
    double tmax = 0, util[BINS];
    for (int i = 0; i < nruns; i++)
        tmax = fmax(tmax, runs[i]->time_us);
    if (tmax <= 0)
        tmax = 1;
    double left = 70, top = 50, pw = 600, ph = 260, w = left + pw + 230, h = top + ph + 60;
    FILE *f = start(path, w, h, title);
    if (!f)
        return TACOS_ERR_IO;
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
               "stroke=\"black\"/>\n",
            left, top, pw, ph);
    for (int i = 0; i <= 4; i++) {
        double y = top + ph - i * ph / 4, x = left + i * pw / 4;
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%d%%</text>\n", left - 6, y + 4,
                25 * i);
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%.6g</text>\n", x,
                top + ph + 16, tmax * i / 4);
    }
    fprintf(f,
            "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">time (us)</text>\n"
            "<text transform=\"translate(20,%.0f) rotate(-90)\" text-anchor=\"middle\">links busy "
            "(%%)</text>\n",
            left + pw / 2, top + ph + 40, top + ph / 2);
    for (int i = 0; i < nruns; i++) {
        const char *c = colours[i % 6];
        tacos_sim_utilization(runs[i], BINS, util);
        fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
        for (int b = 0; b < BINS; b++)
            fprintf(f, "%.1f,%.1f ", left + pw * runs[i]->time_us * (b + 0.5) / BINS / tmax,
                    top + ph * (1 - util[b]));
        fputs("\"/>\n", f);
        fprintf(f,
                "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
                "stroke-width=\"2\"/><text x=\"%.0f\" y=\"%.0f\">",
                left + pw + 15, top + 10 + 18.0 * i, left + pw + 35, top + 10 + 18.0 * i, c,
                left + pw + 40, top + 14 + 18.0 * i);
        put_text(f, names[i]);
        fprintf(f, " (%.6g us)</text>\n", runs[i]->time_us);
    }
    return finish(f, path);
}
