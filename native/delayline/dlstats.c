/* dlstats: release-lateness histogram. See dlstats.h. */
#include "dlstats.h"

#include <math.h>
#include <string.h>

void dl_hist_init(struct dl_hist *h)
{
	memset(h, 0, sizeof(*h));
}

void dl_hist_add(struct dl_hist *h, uint64_t late_ns)
{
	uint64_t us = late_ns / 1000;
	if (us > DL_HIST_US)
		us = DL_HIST_US;
	h->bins[us]++;
	h->n++;
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
	for (uint32_t i = 0; i <= DL_HIST_US; i++) {
		seen += h->bins[i];
		if (seen >= rank)
			return i == DL_HIST_US ? (double)h->max_ns / 1000.0 : (double)i;
	}
	return (double)h->max_ns / 1000.0;
}
