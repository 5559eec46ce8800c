/*
 * dlstats: release-lateness histogram (how late after its scheduled release
 * time a packet actually got its verdict). 1 us bins up to DL_HIST_US, then
 * one overflow bin; the exact maximum is kept separately.
 */
#ifndef MPTCPLAB_DLSTATS_H
#define MPTCPLAB_DLSTATS_H

#include <stdint.h>

#define DL_HIST_US 20000 /* 20 ms: anything later is a broken run anyway */

struct dl_hist {
	uint64_t bins[DL_HIST_US + 1]; /* last bin: >= DL_HIST_US */
	uint64_t n;
	uint64_t max_ns;
};

void dl_hist_init(struct dl_hist *h);
void dl_hist_add(struct dl_hist *h, uint64_t late_ns);
/* Percentile p in (0, 100] in microseconds (bin lower edge; the exact max when
 * p falls in the overflow bin); 0 when empty. */
double dl_hist_percentile_us(const struct dl_hist *h, double p);

#endif
