/* dlstats: latency histograms. See dlstats.h. */
#include "dlstats.h"

#include <math.h>
#include <string.h>

void dl_hist_init(struct dl_hist *h)
{
	memset(h, 0, sizeof(*h));
}

static uint32_t bin_of(uint64_t ns)
{
	uint64_t us = ns / 1000;
	if (us < DL_HIST_US)
		return (uint32_t)us;
	uint64_t ms = ns / 1000000;
	if (ms >= DL_HIST_COARSE_MS)
		return DL_HIST_BINS - 1;
	return (uint32_t)(DL_HIST_US + (ms - DL_HIST_US / 1000));
}

/* lower edge of a bin, in microseconds */
static double bin_us(uint32_t i)
{
	if (i < DL_HIST_US)
		return (double)i;
	return (double)(i - DL_HIST_US) * 1000.0 + DL_HIST_US;
}

void dl_hist_add(struct dl_hist *h, uint64_t late_ns)
{
	h->bins[bin_of(late_ns)]++;
	h->n++;
	h->sum_ns += late_ns;
	if (late_ns > h->max_ns)
		h->max_ns = late_ns;
}

double dl_hist_percentile_us(const struct dl_hist *h, double p)
{
	if (h->n == 0)
		return 0.0;
	/* nearest-rank: the smallest value with at least p% of samples at or below */
	uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->n);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (uint32_t i = 0; i < DL_HIST_BINS; i++) {
		seen += h->bins[i];
		if (seen >= rank)
			return i == DL_HIST_BINS - 1 ? (double)h->max_ns / 1000.0 : bin_us(i);
	}
	return (double)h->max_ns / 1000.0;
}

double dl_hist_mean_us(const struct dl_hist *h)
{
	return h->n ? (double)h->sum_ns / (double)h->n / 1000.0 : 0.0;
}

void dl_worst_add(struct dl_worst *w, const struct dl_stall *s)
{
	if (w->n == DL_WORST_N && s->dur_ns <= w->s[DL_WORST_N - 1].dur_ns)
		return;
	uint32_t i = w->n < DL_WORST_N ? w->n++ : DL_WORST_N - 1;
	/* insertion into the sorted array, shifting shorter ones down */
	while (i > 0 && w->s[i - 1].dur_ns < s->dur_ns) {
		w->s[i] = w->s[i - 1];
		i--;
	}
	w->s[i] = *s;
}
