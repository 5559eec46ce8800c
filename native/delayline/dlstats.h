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

/* The longest stalls of a run, with when they happened (CLOCK_MONOTONIC, shared
 * by every delay line of the host: stalls of several lines at the same time
 * were host-wide, not one line's own work). A stall is a verdict call that
 * lasted long (kind 'v', with its off-CPU part when measured) or a timed sleep
 * that woke up late (kind 'w'). The counters alone cannot say which came first
 * when a long wake-up and a big verdict follow each other. */
#define DL_WORST_N 8

struct dl_stall {
	uint64_t at_ns;  /* start of the stall */
	uint64_t dur_ns;
	int64_t off_ns;  /* off-CPU part of a verdict call; -1: not measured */
	uint32_t batch;  /* packets released by the verdict call; 0 for a wake-up */
	char kind;       /* 'v' verdict call, 'w' wake-up */
};

struct dl_worst {
	struct dl_stall s[DL_WORST_N]; /* longest first */
	uint32_t n;
};

/* Keeps the stall when it is among the DL_WORST_N longest so far (ties: the
 * earlier one stays). Constant time when it is not. */
void dl_worst_add(struct dl_worst *w, const struct dl_stall *s);

#endif
