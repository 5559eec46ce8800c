/*
 * dlstats: latency histograms of the delay line (release lateness: how late
 * after its scheduled release time a packet got its verdict; delivery: how
 * long after its kernel receive timestamp it reached us). 1 us bins up to
 * DL_HIST_US, then 1 ms bins up to DL_HIST_COARSE_MS, then one overflow bin;
 * the exact maximum is kept separately. The coarse tail exists because a
 * delay line that falls behind at 400 Mbit/s is tens of ms late, and a p99
 * that could only say "beyond 20 ms" (it used to report the maximum there)
 * hid how far behind it was.
 */
#ifndef MPTCPLAB_DLSTATS_H
#define MPTCPLAB_DLSTATS_H

#include <stdint.h>

#define DL_HIST_US 20000        /* fine part: 1 us bins, 0 .. 20 ms */
#define DL_HIST_COARSE_MS 10000 /* coarse part: 1 ms bins, 20 ms .. 10 s */
#define DL_HIST_BINS (DL_HIST_US + (DL_HIST_COARSE_MS - DL_HIST_US / 1000) + 1)

struct dl_hist {
	uint64_t bins[DL_HIST_BINS]; /* last bin: >= DL_HIST_COARSE_MS */
	uint64_t n;
	uint64_t max_ns;
	uint64_t sum_ns;
};

void dl_hist_init(struct dl_hist *h);
void dl_hist_add(struct dl_hist *h, uint64_t late_ns);
/* Percentile p in (0, 100] in microseconds (bin lower edge; the exact max when
 * p falls in the overflow bin); 0 when empty. */
double dl_hist_percentile_us(const struct dl_hist *h, double p);
/* Mean in microseconds; 0 when empty. */
double dl_hist_mean_us(const struct dl_hist *h);

#endif
