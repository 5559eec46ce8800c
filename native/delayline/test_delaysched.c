/*
 * Unit test of the delay line's scheduling core with a fake clock: release
 * order, release times, jitter bounds and clipping, no reordering, full FIFO,
 * wait times, seed reproducibility, the lateness percentiles and the
 * longest-stalls log; the trace stage (opportunities, partial packets, lost
 * credit, credit lost under load, loops, offset, outages, drop-tail limits, the trace reader).
 * Run by `make -C native test`; exit status 0 only when every check passes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "delaysched.h"
#include "dlcontrol.h"
#include "dlstats.h"

static int failures, checks;

#define CHECK(cond, ...)                                                            \
	do {                                                                        \
		checks++;                                                           \
		if (!(cond)) {                                                      \
			failures++;                                                 \
			fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
		}                                                                   \
	} while (0)

#define MS 1000000ULL
#define US 1000ULL

static void test_fixed_delay_fifo(void)
{
	struct dl_sched s;
	struct dl_entry e;
	CHECK(dl_sched_init(&s, 8, 20 * MS, 0, 1) == 0, "init");
	CHECK(dl_sched_wait_ns(&s, 0) == -1, "empty wait is -1");
	CHECK(dl_sched_head(&s) == NULL, "empty head");
	/* arrivals at 0, 1 ms, 1 ms, 5 ms */
	uint64_t arr[] = {0, 1 * MS, 1 * MS, 5 * MS};
	for (unsigned i = 0; i < 4; i++)
		CHECK(dl_sched_push(&s, 100 + i, 1500, arr[i]) == 0, "push %u", i);
	CHECK(dl_sched_wait_ns(&s, 0) == (int64_t)(20 * MS), "first due in 20 ms");
	CHECK(dl_sched_wait_ns(&s, 19 * MS) == (int64_t)(1 * MS), "1 ms left");
	CHECK(dl_sched_pop_due(&s, 20 * MS - 1, &e) == 0, "not due 1 ns early");
	CHECK(dl_sched_pop_due(&s, 20 * MS, &e) == 1 && e.id == 100 && e.release_ns == 20 * MS,
	      "first at exactly 20 ms (id %u at %llu)", e.id, (unsigned long long)e.release_ns);
	CHECK(dl_sched_pop_due(&s, 20 * MS, &e) == 0, "second not due yet");
	/* a late wake-up releases everything due, in order */
	unsigned ids[3], n = 0;
	uint64_t rel[3];
	while (n < 3 && dl_sched_pop_due(&s, 30 * MS, &e)) {
		ids[n] = e.id;
		rel[n++] = e.release_ns;
	}
	CHECK(n == 3, "three due at 30 ms, got %u", n);
	CHECK(ids[0] == 101 && ids[1] == 102 && ids[2] == 103, "FIFO order");
	CHECK(rel[0] == 21 * MS && rel[1] == 21 * MS && rel[2] == 25 * MS, "release = arrival + delay");
	CHECK(s.max_held == 4, "max_held %u", s.max_held);
	CHECK(dl_sched_wait_ns(&s, 30 * MS) == -1, "empty again");
	dl_sched_free(&s);
}

static void test_full_and_wraparound(void)
{
	struct dl_sched s;
	struct dl_entry e;
	dl_sched_init(&s, 3, 1 * MS, 0, 1);
	CHECK(dl_sched_push(&s, 1, 60, 0) == 0, "p1");
	CHECK(dl_sched_push(&s, 2, 60, 0) == 0, "p2");
	CHECK(dl_sched_push(&s, 3, 60, 0) == 0, "p3");
	CHECK(dl_sched_push(&s, 4, 60, 0) == -1, "full FIFO refuses");
	CHECK(dl_sched_pop_due(&s, 1 * MS, &e) && e.id == 1, "pop 1");
	CHECK(dl_sched_push(&s, 5, 60, 2 * MS) == 0, "push after pop wraps the ring");
	uint32_t want[] = {2, 3, 5};
	for (unsigned i = 0; i < 3; i++)
		CHECK(dl_sched_pop_due(&s, 10 * MS, &e) && e.id == want[i], "wrapped order %u: %u", i, e.id);
	CHECK(s.count == 0, "drained");
	dl_sched_free(&s);
	CHECK(dl_sched_init(&s, 0, 1, 0, 1) == -1, "zero capacity refused");
}

static void test_jitter_bounds_no_reorder(void)
{
	struct dl_sched s;
	struct dl_entry e;
	const uint64_t d = 10 * MS, j = 3 * MS;
	dl_sched_init(&s, 100000, d, j, 42);
	uint64_t lo = UINT64_MAX, hi = 0, prev_rel = 0;
	int reorder_clamped = 0, ok_bounds = 1, ok_order = 1;
	for (uint32_t i = 0; i < 100000; i++) {
		uint64_t arr = i * 50 * US; /* 20 kpps */
		dl_sched_push(&s, i, 100, arr);
		dl_sched_pop_due(&s, UINT64_MAX, &e);
		uint64_t delay = e.release_ns - arr;
		if (e.id != i)
			ok_order = 0;
		if (e.release_ns < prev_rel)
			ok_order = 0;
		if (e.release_ns == prev_rel)
			reorder_clamped++;
		if (delay < d - j)
			ok_bounds = 0;
		/* only the "no reordering" clamp may push past delay + jitter */
		if (delay > d + j && e.release_ns != prev_rel)
			ok_bounds = 0;
		lo = delay < lo ? delay : lo;
		hi = delay > hi ? delay : hi;
		prev_rel = e.release_ns;
	}
	CHECK(ok_order, "release times non-decreasing and FIFO");
	CHECK(ok_bounds, "delay within [d-J, d+J] except no-reorder clamps");
	CHECK(hi > d + j - 100 * US, "jitter reaches its high end (max %llu)", (unsigned long long)hi);
	CHECK(reorder_clamped > 0, "with 50 us spacing and 6 ms jitter some packets are clamped");
	dl_sched_free(&s);

	/* sparse arrivals (spacing > 2J): nothing is clamped, the full range shows */
	dl_sched_init(&s, 16, d, j, 43);
	lo = UINT64_MAX;
	hi = 0;
	for (uint32_t i = 0; i < 20000; i++) {
		uint64_t arr = (uint64_t)i * 7 * MS;
		dl_sched_push(&s, i, 100, arr);
		dl_sched_pop_due(&s, UINT64_MAX, &e);
		uint64_t delay = e.release_ns - arr;
		lo = delay < lo ? delay : lo;
		hi = delay > hi ? delay : hi;
	}
	CHECK(lo >= d - j && lo < d - j + 10 * US, "low end d-J reached (min %llu)", (unsigned long long)lo);
	CHECK(hi <= d + j && hi > d + j - 10 * US, "high end d+J reached (max %llu)", (unsigned long long)hi);
	dl_sched_free(&s);
}

static void test_jitter_clipped_at_zero(void)
{
	struct dl_sched s;
	dl_sched_init(&s, 4, 1 * MS, 5 * MS, 7);
	int zero = 0, neg = 0;
	for (int i = 0; i < 10000; i++) {
		uint64_t dd = dl_sched_draw_delay(&s);
		if (dd == 0)
			zero++;
		if (dd > 6 * MS)
			neg++; /* would be a wrapped negative */
	}
	CHECK(zero > 3000, "delay + jitter < 0 clips to 0 (about 40%% of draws), got %d", zero);
	CHECK(neg == 0, "no wrapped values");
	dl_sched_free(&s);
}

static void test_seed_reproducible(void)
{
	struct dl_sched a, b, c;
	dl_sched_init(&a, 4, 5 * MS, 1 * MS, 99);
	dl_sched_init(&b, 4, 5 * MS, 1 * MS, 99);
	dl_sched_init(&c, 4, 5 * MS, 1 * MS, 100);
	int same = 1, differs = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t x = dl_sched_draw_delay(&a), y = dl_sched_draw_delay(&b), z = dl_sched_draw_delay(&c);
		same &= x == y;
		differs |= x != z;
	}
	CHECK(same, "same seed, same jitter sequence");
	CHECK(differs, "different seed, different sequence");
	dl_sched_free(&a);
	dl_sched_free(&b);
	dl_sched_free(&c);
}

static void test_hist(void)
{
	struct dl_hist *h = malloc(sizeof(*h));
	dl_hist_init(h);
	CHECK(dl_hist_percentile_us(h, 50) == 0.0, "empty hist");
	for (int i = 1; i <= 100; i++)
		dl_hist_add(h, (uint64_t)i * US + 300); /* 1.3 us .. 100.3 us */
	CHECK(dl_hist_percentile_us(h, 50) == 50.0, "p50 %.1f", dl_hist_percentile_us(h, 50));
	CHECK(dl_hist_percentile_us(h, 99) == 99.0, "p99 %.1f", dl_hist_percentile_us(h, 99));
	CHECK(h->max_ns == 100 * US + 300, "exact max");
	dl_hist_add(h, 50 * MS + 700 * US); /* in the coarse (1 ms) part */
	CHECK(dl_hist_percentile_us(h, 100) == 50000.0, "coarse bin lower edge, got %.1f",
	      dl_hist_percentile_us(h, 100));
	dl_hist_add(h, 20 * MS); /* first coarse bin */
	CHECK(dl_hist_percentile_us(h, 100) == 50000.0, "max still in the 50 ms bin");
	dl_hist_add(h, 12000 * MS); /* beyond the histogram */
	CHECK(dl_hist_percentile_us(h, 100) == 12000000.0, "overflow bin reports the max");
	/* p99 of 103 samples is rank 102: the 50 ms sample; p98 rank 101: 20 ms */
	CHECK(dl_hist_percentile_us(h, 99) == 50000.0 && dl_hist_percentile_us(h, 98) == 20000.0, "p99 in the coarse part %.1f",
	      dl_hist_percentile_us(h, 99));
	free(h);
}

static void test_worst(void)
{
	struct dl_worst w = {0};
	for (uint64_t i = 1; i <= 20; i++) {
		/* durations 1..20 ms in a scrambled order, at_ns says which one */
		uint64_t d = (i * 7) % 20 + 1;
		struct dl_stall s = {.at_ns = d, .dur_ns = d * MS, .off_ns = -1, .batch = 0, .kind = 'w'};
		dl_worst_add(&w, &s);
	}
	CHECK(w.n == DL_WORST_N, "kept %u", w.n);
	int sorted = 1;
	for (unsigned i = 0; i < w.n; i++)
		sorted &= w.s[i].dur_ns == (20 - i) * MS && w.s[i].at_ns == 20 - i;
	CHECK(sorted, "the 8 longest, longest first");
	struct dl_stall tie = {.at_ns = 99, .dur_ns = 13 * MS, .off_ns = 5, .batch = 3, .kind = 'v'};
	dl_worst_add(&w, &tie);
	CHECK(w.s[DL_WORST_N - 1].at_ns == 13, "a tie with the shortest kept does not replace it");
	struct dl_stall big = {.at_ns = 100, .dur_ns = 30 * MS, .off_ns = 5, .batch = 3, .kind = 'v'};
	dl_worst_add(&w, &big);
	CHECK(w.s[0].at_ns == 100 && w.s[0].kind == 'v' && w.s[DL_WORST_N - 1].dur_ns == 14 * MS,
	      "a longer one goes first, the shortest drops out");
}

/* rate stage: 12 Mbit/s serializes 1500 bytes in 1 ms; queue limit 3000 bytes */
static void test_rate_stage(void)
{
	struct dl_sched s;
	struct dl_entry e;
	CHECK(dl_sched_init(&s, 16, 10 * MS, 0, 1) == 0, "init");
	dl_sched_set_rate(&s, 12000000, 3000);
	CHECK(dl_sched_push(&s, 1, 1500, 0) == 0, "A accepted");
	CHECK(dl_sched_push(&s, 2, 1500, 0) == 0, "B accepted: 1500 queued ahead + 1500 = limit");
	CHECK(dl_sched_push(&s, 3, 1500, 0) == -2, "C refused: 3000 queued ahead");
	CHECK(s.rate_drops == 1, "one rate drop");
	CHECK(dl_sched_push(&s, 4, 1500, 1500 * US) == 0, "D accepted: 750 bytes ahead at 1.5 ms");
	CHECK(dl_sched_push(&s, 5, 1500, 10 * MS) == 0, "E accepted on an idle link");
	uint64_t want[][2] = {{1, 11 * MS}, {2, 12 * MS}, {4, 13 * MS}, {5, 21 * MS}};
	for (unsigned i = 0; i < 4; i++) {
		CHECK(dl_sched_pop_due(&s, want[i][1] - 1, &e) == 0, "%u not due 1 ns early", i);
		CHECK(dl_sched_pop_due(&s, want[i][1], &e) == 1 && e.id == want[i][0] && e.release_ns == want[i][1],
		      "packet %u: serialized then delayed (id %u at %llu)", i, e.id, (unsigned long long)e.release_ns);
	}
	/* no limit: nothing refused, releases spaced by the serialization time */
	dl_sched_free(&s);
	CHECK(dl_sched_init(&s, 16, 0, 0, 1) == 0, "init");
	dl_sched_set_rate(&s, 12000000, 0);
	for (unsigned i = 0; i < 10; i++)
		CHECK(dl_sched_push(&s, i, 1500, 0) == 0, "unlimited %u", i);
	CHECK(dl_sched_pop_due(&s, 10 * MS, &e) == 1 && e.release_ns == 1 * MS, "first at 1 ms");
	for (unsigned i = 1; i < 10; i++)
		dl_sched_pop_due(&s, 10 * MS, &e);
	CHECK(e.release_ns == 10 * MS, "tenth at 10 ms");
	dl_sched_free(&s);
}

/* pops everything (far future) into ids/rel; returns how many */
static unsigned drain_all(struct dl_sched *s, uint32_t *ids, uint64_t *rel, unsigned max)
{
	struct dl_entry e;
	unsigned n = 0;
	while (n < max && dl_sched_pop_due(s, UINT64_MAX, &e)) {
		ids[n] = e.id;
		rel[n++] = e.release_ns;
	}
	return n;
}

#define OPP DL_TRACE_OPP_BYTES

/* one opportunity every 2 ms, period 10 ms; delay 5 ms after the departure */
static void test_trace_opportunities(void)
{
	struct dl_sched s;
	uint32_t ms[] = {2, 4, 6, 8, 10};
	uint32_t ids[16];
	uint64_t rel[16];
	CHECK(dl_sched_init(&s, 16, 5 * MS, 0, 1) == 0, "init");
	CHECK(dl_sched_set_trace(&s, ms, 5, 0, 0, 0, 0) == 0, "trace set");
	struct dl_trace *t = s.trace;
	CHECK(dl_sched_push(&s, 1, OPP, 0) == 0, "A: one full opportunity");
	CHECK(dl_sched_push(&s, 2, OPP / 2, 0) == 0, "B: half of the next");
	CHECK(dl_sched_push(&s, 3, OPP / 2, 0) == 0, "C: the other half of the same");
	CHECK(dl_sched_push(&s, 4, 2000, 0) == 0, "D: one opportunity and part of another");
	CHECK(dl_sched_push(&s, 5, 1000, 9 * MS) == 0, "E: after the 8 ms opportunity passed");
	CHECK(dl_sched_push(&s, 6, OPP, 10 * MS) == 0, "F: at the 10 ms opportunity itself: the next loop");
	unsigned n = drain_all(&s, ids, rel, 16);
	uint64_t want[] = {2 * MS, 4 * MS, 4 * MS, 8 * MS, 10 * MS, 12 * MS};
	CHECK(n == 6, "six released, got %u", n);
	for (unsigned i = 0; i < n && i < 6; i++)
		CHECK(ids[i] == i + 1 && rel[i] == want[i] + 5 * MS, "packet %u: departs at %llu ms + 5 ms delay (got id %u at %llu)",
		      i + 1, (unsigned long long)(want[i] / MS), ids[i], (unsigned long long)rel[i]);
	/* used: A 1, B+C 1, D 2, E 1, F 1; lost: 8 ms's rest (3008 - 2000 - 1504 + ... = 1008) and 10 ms's rest (504) */
	CHECK(t->opp_used == 6, "opportunities used %llu", (unsigned long long)t->opp_used);
	CHECK(t->wasted_bytes == (2 * OPP - 2000) + (OPP - 1000), "credit lost %llu", (unsigned long long)t->wasted_bytes);
	CHECK(t->opp_wasted == 0, "no opportunity passed wholly unused");
	CHECK(t->bytes == 3 * OPP + 3000, "bytes delivered %llu", (unsigned long long)t->bytes);
	/* idle until 31 ms: loop 1's 14..20 and loop 2's 22..30 pass unused */
	dl_trace_settle(t, 31 * MS);
	CHECK(t->opp_wasted == 9, "idle opportunities %llu", (unsigned long long)t->opp_wasted);
	CHECK(t->wasted_bytes == (2 * OPP - 2000) + (OPP - 1000) + 9 * OPP, "idle credit counted");
	CHECK(dl_sched_push(&s, 7, 100, 31 * MS) == 0 && drain_all(&s, ids, rel, 16) == 1 && rel[0] == 32 * MS + 5 * MS,
	      "after the idle time the next opportunity is 32 ms (got %llu)", (unsigned long long)rel[0]);
	dl_sched_free(&s);
}

static void test_trace_same_ms_and_offset(void)
{
	struct dl_sched s;
	uint32_t ids[16];
	uint64_t rel[16];
	uint32_t burst[] = {1, 1, 1, 4}; /* three opportunities at 1 ms, one at 4 ms */
	dl_sched_init(&s, 16, 0, 0, 1);
	dl_sched_set_trace(&s, burst, 4, 0, 0, 0, 0);
	for (uint32_t i = 0; i < 5; i++)
		dl_sched_push(&s, i, OPP, 0);
	unsigned n = drain_all(&s, ids, rel, 16);
	CHECK(n == 5 && rel[0] == 1 * MS && rel[1] == 1 * MS && rel[2] == 1 * MS && rel[3] == 4 * MS && rel[4] == 5 * MS,
	      "same ms on three lines: three opportunities; the loop's first is at 4 + 1 ms (got %llu %llu)",
	      (unsigned long long)rel[3], (unsigned long long)rel[4]);
	dl_sched_free(&s);

	/* offset 5 ms into {2,4,6,8,10}, started at 100 ms: the first opportunity is the 6 ms line */
	uint32_t ms[] = {2, 4, 6, 8, 10};
	dl_sched_init(&s, 16, 0, 0, 1);
	CHECK(dl_sched_set_trace(&s, ms, 5, 5, 100 * MS, 0, 0) == 0, "offset set");
	dl_sched_push(&s, 1, OPP, 100 * MS);
	dl_sched_push(&s, 2, OPP, 100 * MS);
	dl_sched_push(&s, 3, OPP, 100 * MS);
	n = drain_all(&s, ids, rel, 16);
	CHECK(n == 3 && rel[0] == 101 * MS && rel[1] == 103 * MS && rel[2] == 105 * MS,
	      "offset 5 ms: 6, 8, 10 ms of the trace (got %llu %llu %llu)", (unsigned long long)rel[0],
	      (unsigned long long)rel[1], (unsigned long long)rel[2]);
	dl_sched_free(&s);
	/* an offset beyond the period wraps: 25 ms == 5 ms */
	dl_sched_init(&s, 16, 0, 0, 1);
	dl_sched_set_trace(&s, ms, 5, 25, 100 * MS, 0, 0);
	dl_sched_push(&s, 1, OPP, 100 * MS);
	CHECK(drain_all(&s, ids, rel, 16) == 1 && rel[0] == 101 * MS, "offset 25 ms wraps to 5 ms");
	dl_sched_free(&s);
}

/* an outage: 1 opportunity per ms for 100 ms, none for 500 ms, then again */
static void test_trace_outage(void)
{
	static uint32_t ms[700];
	uint32_t n = 0;
	for (uint32_t i = 1; i <= 100; i++)
		ms[n++] = i;
	for (uint32_t i = 601; i <= 700; i++)
		ms[n++] = i;
	struct dl_sched s;
	struct dl_entry e;
	dl_sched_init(&s, 4096, 10 * MS, 2 * MS, 5);
	dl_sched_set_trace(&s, ms, n, 0, 0, 0, 0);
	/* 1.5 packets per ms offered for 700 ms: saturating, never dropped (no limit) */
	uint32_t id = 0;
	for (uint64_t t = 0; t < 700 * MS; t += 2 * MS) {
		CHECK(dl_sched_push(&s, id++, OPP, t) == 0, "push");
		CHECK(dl_sched_push(&s, id++, OPP, t + MS) == 0, "push");
		CHECK(dl_sched_push(&s, id++, OPP, t + MS) == 0, "push");
	}
	uint64_t prev = 0, gap = 0, in_outage = 0, last = 0;
	uint32_t k = 0;
	int order = 1;
	while (dl_sched_pop_due(&s, UINT64_MAX, &e)) {
		if (k && e.release_ns - prev > gap)
			gap = e.release_ns - prev;
		/* the first loop's departures are at 1..100 and 601..700 ms, released 10 +- 2 ms later */
		if (e.release_ns > 112 * MS && e.release_ns < 609 * MS)
			in_outage++;
		order &= e.release_ns >= prev && e.id == k;
		prev = e.release_ns;
		last = e.id;
		k++;
	}
	CHECK(order, "FIFO, release times non-decreasing under jitter");
	CHECK(in_outage == 0, "nothing leaves during the outage (%llu did)", (unsigned long long)in_outage);
	CHECK(gap >= 496 * MS && gap <= 504 * MS, "the longest gap is the outage, 500 +- 4 ms of jitter (%llu us)",
	      (unsigned long long)(gap / US));
	/* 1050 full-size packets, one opportunity each: 5 loops of 200 and 50 more */
	CHECK(k == 1050 && s.trace->opp_used == 1050 && last == 1049, "%u released, opportunities used %llu", k,
	      (unsigned long long)s.trace->opp_used);
	CHECK(s.trace->opp_wasted == 0, "saturated: no opportunity unused (%llu)", (unsigned long long)s.trace->opp_wasted);
	dl_sched_free(&s);
}

/* Credit lost while the link is overloaded is told apart from idle time before and after
 * a flow: what passes unused between the first and the last packet the queue refused.
 * A flood keeps the queue from emptying, so none; a pause in it does lose credit. */
static void test_trace_wasted_between_drops(void)
{
	uint32_t every_ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	uint32_t ids[256];
	uint64_t rel[256];
	struct dl_sched s;
	/* a queue of 2 packets; 2 packets per ms offered from 10.5 ms to 30 ms, then nothing */
	dl_sched_init(&s, 256, 0, 0, 1);
	dl_sched_set_trace(&s, every_ms, 10, 0, 0, 0, 2);
	struct dl_trace *t = s.trace;
	dl_sched_push(&s, 999, 40, 500 * US); /* a lone small packet first (a control connection) */
	uint32_t ok = 0;
	for (uint32_t i = 0; i < 40; i++)
		ok += dl_sched_push(&s, i, OPP, 10 * MS + 500 * US + i / 2 * MS) == 0;
	dl_trace_settle(t, 60 * MS + 500 * US);
	CHECK(drain_all(&s, ids, rel, 256) == ok + 1 && t->drops > 0, "%u accepted, %llu refused", ok,
	      (unsigned long long)t->drops);
	/* 2..10 ms idle after the lone packet; the last accepted leaves at 31 ms, 32..60 pass */
	CHECK(t->opp_wasted == 9 + 29, "wasted in all %llu", (unsigned long long)t->opp_wasted);
	CHECK(t->wasted_at_last_drop - t->wasted_at_first_drop == 0, "under the flood: none (%llu)",
	      (unsigned long long)(t->wasted_at_last_drop - t->wasted_at_first_drop));
	dl_sched_free(&s);

	/* the same flood paused from 19.5 to 40.5 ms: the last queued leaves at 21 ms, 22..40 pass */
	dl_sched_init(&s, 256, 0, 0, 1);
	dl_sched_set_trace(&s, every_ms, 10, 0, 0, 0, 2);
	t = s.trace;
	for (uint32_t i = 0; i < 60; i++) {
		uint64_t at = 10 * MS + 500 * US + i / 2 * MS;
		dl_sched_push(&s, i, OPP, at < 20 * MS ? at : at + 20 * MS);
	}
	CHECK(t->wasted_at_last_drop - t->wasted_at_first_drop == 19, "a pause under load: 19 lost (%llu)",
	      (unsigned long long)(t->wasted_at_last_drop - t->wasted_at_first_drop));
	dl_sched_free(&s);
}

static void test_trace_limits(void)
{
	struct dl_sched s;
	uint32_t every10[] = {10};
	dl_sched_init(&s, 16, 0, 0, 1);
	dl_sched_set_trace(&s, every10, 1, 0, 0, 0, 2);
	CHECK(dl_sched_push(&s, 1, OPP, 0) == 0, "p1");
	CHECK(dl_sched_push(&s, 2, OPP, 0) == 0, "p2: two queued = the packet limit");
	CHECK(dl_sched_push(&s, 3, OPP, 0) == -2, "p3 refused");
	CHECK(dl_sched_push(&s, 4, OPP, 10 * MS) == 0, "p4: p1 left at 10 ms, one queued");
	CHECK(dl_sched_push(&s, 5, OPP, 10 * MS) == -2, "p5 refused");
	CHECK(s.trace->drops == 2 && s.trace->drop_bytes == 2 * OPP, "drops counted");
	dl_sched_free(&s);

	dl_sched_init(&s, 16, 0, 0, 1);
	dl_sched_set_trace(&s, every10, 1, 0, 0, 2 * OPP, 0);
	CHECK(dl_sched_push(&s, 1, OPP, 0) == 0 && dl_sched_push(&s, 2, OPP, 0) == 0, "bytes limit: two fit");
	CHECK(dl_sched_push(&s, 3, 1, 0) == -2, "one byte more does not");
	dl_sched_free(&s);

	/* the packet being delivered is not queued: a 2-opportunity packet from 10 to 20 ms */
	dl_sched_init(&s, 16, 0, 0, 1);
	dl_sched_set_trace(&s, every10, 1, 0, 0, 0, 1);
	CHECK(dl_sched_push(&s, 1, 2 * OPP, 0) == 0, "big packet");
	CHECK(dl_sched_push(&s, 2, OPP, 5 * MS) == -2, "at 5 ms it waits: the queue is full");
	CHECK(dl_sched_push(&s, 3, OPP, 15 * MS) == 0, "at 15 ms it is in transit: room for one");
	CHECK(dl_sched_push(&s, 4, OPP, 15 * MS) == -2, "and one only");
	dl_sched_free(&s);

	/* the stages exclude each other; bad traces are refused */
	uint32_t zero[] = {0, 0}, down[] = {5, 3};
	dl_sched_init(&s, 16, 0, 0, 1);
	CHECK(dl_sched_set_trace(&s, zero, 2, 0, 0, 0, 0) == -1, "zero period refused");
	CHECK(dl_sched_set_trace(&s, down, 2, 0, 0, 0, 0) == -1, "decreasing refused");
	CHECK(dl_sched_set_trace(&s, every10, 0, 0, 0, 0, 0) == -1, "empty refused");
	dl_sched_set_rate(&s, 1000000, 0);
	CHECK(dl_sched_set_trace(&s, every10, 1, 0, 0, 0, 0) == -1, "not with a rate stage");
	dl_sched_free(&s);
}

/* a trace switch (mobility): the backlog keeps its departures, then the new trace's
 * opportunities, from its offset at the switch; the counters carry on */
static void test_trace_switch(void)
{
	struct dl_sched s;
	uint32_t ids[32];
	uint64_t rel[32];
	uint32_t every2[] = {2, 4, 6, 8, 10}; /* one opportunity every 2 ms */
	uint32_t every1[] = {1, 2, 3, 4};     /* one every ms */
	uint32_t gap[] = {1, 2, 50};          /* 1, 2 ms, then nothing until 50 */
	dl_sched_init(&s, 32, 1 * MS, 0, 1);
	CHECK(dl_sched_switch_trace(&s, every1, 4, 0, 0) == -1, "no trace stage: refused");
	dl_sched_set_trace(&s, every2, 5, 0, 0, 0, 0);
	/* three packets at 0: they depart at 2, 4, 6 ms under the old trace */
	for (uint32_t i = 0; i < 3; i++)
		dl_sched_push(&s, i, OPP, 0);
	CHECK(dl_sched_switch_trace(&s, gap, 0, 0, 3 * MS) == -1, "an empty trace is refused");
	CHECK(s.trace->switches == 0, "a refused switch is not counted");
	/* at 3 ms switch to one per ms: the backlog's last departure is 6 ms, so 7, 8 ms follow */
	CHECK(dl_sched_switch_trace(&s, every1, 4, 0, 3 * MS) == 0, "switch");
	dl_sched_push(&s, 3, OPP, 3 * MS);
	dl_sched_push(&s, 4, OPP, 3 * MS);
	unsigned n = drain_all(&s, ids, rel, 32);
	uint64_t want[] = {2, 4, 6, 7, 8};
	CHECK(n == 5, "five released, got %u", n);
	for (unsigned i = 0; i < n && i < 5; i++)
		CHECK(rel[i] == want[i] * MS + 1 * MS, "packet %u at %llu ms + 1 (got %llu ns)", i,
		      (unsigned long long)want[i], (unsigned long long)rel[i]);
	CHECK(s.trace->switches == 1 && s.trace->bytes == 5 * OPP, "counted across the switch");
	/* at 20 ms to the gap trace, 1 ms in: its 2 ms opportunity is at 21 ms, then nothing until 69 ms */
	CHECK(dl_sched_switch_trace(&s, gap, 3, 1, 20 * MS) == 0, "second switch, with an offset");
	for (uint32_t i = 0; i < 3; i++)
		dl_sched_push(&s, 10 + i, OPP, 20 * MS);
	n = drain_all(&s, ids, rel, 32);
	CHECK(n == 3 && rel[0] == 22 * MS && rel[1] == 70 * MS && rel[2] == 71 * MS,
	      "offset 1 ms: 2 ms line at 21, the 50 ms line at 69, the loop's 1 ms at 70 (got %llu %llu %llu)",
	      (unsigned long long)rel[0], (unsigned long long)rel[1], (unsigned long long)rel[2]);
	/* the idle time of the first trace after the backlog was lost credit, not used */
	CHECK(s.trace->opp_used == 8, "opportunities used %llu", (unsigned long long)s.trace->opp_used);
	dl_sched_free(&s);
}

/* writes text to a temporary file and loads it */
static int load_text(const char *text, uint32_t **ms, uint32_t *n, char *err, size_t errlen)
{
	char path[] = "/tmp/test_delaysched_traceXXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -2;
	ssize_t w = write(fd, text, strlen(text));
	close(fd);
	int r = w == (ssize_t)strlen(text) ? dl_trace_load(path, ms, n, err, errlen) : -2;
	unlink(path);
	return r;
}

static void test_trace_load(void)
{
	uint32_t *ms = NULL, n = 0;
	char err[256] = "";
	CHECK(load_text("1\n1\n3\n", &ms, &n, err, sizeof(err)) == 0 && n == 3 && ms[2] == 3, "good trace: %s", err);
	free(ms);
	CHECK(load_text("1\r\n2", &ms, &n, err, sizeof(err)) == 0 && n == 2 && ms[1] == 2, "CRLF, no final newline");
	free(ms);
	CHECK(load_text("1\n\n2\n", &ms, &n, err, sizeof(err)) == -1 && strstr(err, ":2: empty line"), "empty line: %s", err);
	CHECK(load_text("1\n2x\n", &ms, &n, err, sizeof(err)) == -1 && strstr(err, ":2: '2x' is not"), "non-integer: %s", err);
	CHECK(load_text("-1\n", &ms, &n, err, sizeof(err)) == -1 && strstr(err, ":1:"), "negative: %s", err);
	CHECK(load_text("5\n3\n", &ms, &n, err, sizeof(err)) == -1 && strstr(err, ":2: 3 ms is before"), "decreasing: %s", err);
	CHECK(load_text("0\n0\n", &ms, &n, err, sizeof(err)) == -1 && strstr(err, "must last"), "zero period: %s", err);
	CHECK(load_text("", &ms, &n, err, sizeof(err)) == -1 && strstr(err, "empty trace"), "empty file: %s", err);
	CHECK(dl_trace_load("/nonexistent/trace", &ms, &n, err, sizeof(err)) == -1 && strstr(err, "/nonexistent/trace"),
	      "missing file: %s", err);
}

/* the control file: the delay line's first line, a trace switch's second */
static void test_control_file(void)
{
	char path[] = "/tmp/test_dlcontrolXXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0, "temp file");
	close(fd);
	long pid = 0;
	uint64_t d = 0, j = 0, off = 7;
	static char trace[DL_CONTROL_PATH_MAX];
	CHECK(dl_control_write(path, 42, 10000, 500, NULL, 0) == 0, "write without a trace");
	CHECK(dl_control_read(path, &pid, &d, &j, trace, &off) == 0 && pid == 42 && d == 10000 && j == 500 &&
	      trace[0] == 0 && off == 7, "read back: no trace, offset untouched");
	CHECK(dl_control_write(path, 42, 20000, 0, "/x/my walk.trace", 1500) == 0, "write with a trace");
	CHECK(dl_control_read(path, &pid, &d, &j, trace, &off) == 0 && d == 20000 && j == 0 &&
	      !strcmp(trace, "/x/my walk.trace") && off == 1500, "read back the trace, spaces kept: '%s' %llu", trace,
	      (unsigned long long)off);
	CHECK(dl_control_write(path, 42, 1, 0, "a\nb", 0) == -1, "a path with a newline is refused");
	FILE *f = fopen(path, "w");
	fputs("42 1 0\ntrace x\n", f);
	fclose(f);
	CHECK(dl_control_read(path, &pid, &d, &j, trace, &off) == -1, "a malformed trace line is refused");
	f = fopen(path, "w");
	fputs("42 1 0\ntrace 5 \n", f);
	fclose(f);
	CHECK(dl_control_read(path, &pid, &d, &j, trace, &off) == -1, "a trace line without a path is refused");
	unlink(path);
}

int main(void)
{
	test_fixed_delay_fifo();
	test_full_and_wraparound();
	test_jitter_bounds_no_reorder();
	test_jitter_clipped_at_zero();
	test_seed_reproducible();
	test_hist();
	test_worst();
	test_rate_stage();
	test_trace_opportunities();
	test_trace_same_ms_and_offset();
	test_trace_outage();
	test_trace_wasted_between_drops();
	test_trace_limits();
	test_trace_load();
	test_trace_switch();
	test_control_file();
	printf("test_delaysched: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
