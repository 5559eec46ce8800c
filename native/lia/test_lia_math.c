/* Host unit test of lia_math.h, the arithmetic the BPF congestion control runs.
 *
 * Without arguments: fixed cases and seeded random ones against RFC 6356's formula in
 * double precision; prints "test_lia_math: N checks, F failures", exit 1 on a failure.
 * With --eval: reads lines "cwnd c1 r1 [c2 r2 ...]" (the subflow's own cwnd, then up to
 * LIA_MAX_SUBFLOWS samples) and prints w = max(cwnd, cwnd_total / alpha) for each, so
 * tests/unit/test_lia_math.py can hold it against its own rendering of the RFC.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint32_t lia_u32;
typedef uint64_t lia_u64;
#include "lia_math.h"

static int failures, checks;

/* cwnd_total / alpha as RFC 6356 writes alpha */
static double rfc_coupled(const struct lia_sample *s)
{
	double total = 0, best = 0, sum = 0, alpha;
	int i;

	for (i = 0; i < LIA_MAX_SUBFLOWS; i++) {
		double c = s[i].cwnd, r = s[i].rtt_us ? s[i].rtt_us : 1;

		if (!s[i].cwnd)
			continue;
		total += c;
		if (c / (r * r) > best)
			best = c / (r * r);
		sum += c / r;
	}
	if (total == 0)
		return 0;
	alpha = total * best / (sum * sum);
	return total / alpha;
}

static void expect_near(const char *what, const struct lia_sample *s, lia_u32 cwnd)
{
	double want = rfc_coupled(s), w = want > cwnd ? want : cwnd;
	lia_u32 got = lia_acks_per_segment(cwnd, s);

	checks++;
	/* the integer answer truncates: at most one ACK below, never above (+ rounding) */
	if (!(got <= w + 1e-6 * w + 1e-9 && got + 1.0 + 1e-3 * w >= w)) {
		failures++;
		printf("FAIL %s: cwnd %u: got %u, RFC %.3f\n", what, cwnd, got, w);
	}
}

static void fixed_cases(void)
{
	struct lia_sample s[LIA_MAX_SUBFLOWS];

	/* one subflow: w = its cwnd (reno) */
	memset(s, 0, sizeof(s));
	s[0] = (struct lia_sample){ 10, 1000 };
	checks++;
	if (lia_acks_per_segment(10, s) != 10) {
		failures++;
		printf("FAIL single subflow: %u\n", lia_acks_per_segment(10, s));
	}
	/* no sample at all (no RTT yet): 0, so w = own cwnd */
	memset(s, 0, sizeof(s));
	checks++;
	if (lia_coupled_acks(s) != 0 || lia_acks_per_segment(7, s) != 7) {
		failures++;
		printf("FAIL empty\n");
	}
	/* two equal subflows, equal RTT: alpha = 1/2, cwnd_total / alpha = 2 * 2c = 4c */
	memset(s, 0, sizeof(s));
	s[0] = (struct lia_sample){ 20, 5000 };
	s[3] = (struct lia_sample){ 20, 5000 };
	checks++;
	if (lia_acks_per_segment(20, s) != 80) {
		failures++;
		printf("FAIL two equal: %u\n", lia_acks_per_segment(20, s));
	}
	/* n equal subflows: n^2 c, so together they grow by one segment per RTT like one flow */
	memset(s, 0, sizeof(s));
	for (int i = 0; i < LIA_MAX_SUBFLOWS; i++)
		s[i] = (struct lia_sample){ 12, 800 };
	checks++;
	if (lia_acks_per_segment(12, s) != 12 * 64) {
		failures++;
		printf("FAIL eight equal: %u\n", lia_acks_per_segment(12, s));
	}
	/* a fast and a slow path */
	memset(s, 0, sizeof(s));
	s[0] = (struct lia_sample){ 40, 10000 };
	s[1] = (struct lia_sample){ 10, 100000 };
	expect_near("fast+slow, fast subflow", s, 40);
	expect_near("fast+slow, slow subflow", s, 10);
	/* extremes: clamped, no overflow, still monotone sense */
	memset(s, 0, sizeof(s));
	s[0] = (struct lia_sample){ 0xffffffffu, 0xffffffffu };
	s[1] = (struct lia_sample){ 1, 1 };
	checks++;
	if (lia_acks_per_segment(1, s) == 0) {
		failures++;
		printf("FAIL extremes\n");
	}
}

static void expect_u32(const char *what, lia_u32 got, lia_u32 want)
{
	checks++;
	if (got != want) {
		failures++;
		printf("FAIL %s: got %u (0x%x), want %u\n", what, got, got, want);
	}
}

/* The hooks' answers from a wrapped window (docs/cc-lia.md, "cwnd jumps"): the kernel's
 * tcp_packets_in_flight() wraps to 2^32 - k; reno's formulas then answer ssthresh
 * 2^31 - k/2 (copied into cwnd by tcp_end_cwnd_reduction) and undo_cwnd 2^32 - k. */
static void sanity_cases(void)
{
	const lia_u32 wrapped = 0xfffffffdu; /* 3 - 6 in a u32 */
	const lia_u32 mpo = 20;              /* max_packets_out of a small subflow */
	const lia_u32 bound = 2 * mpo + 16;

	/* ordinary windows pass unchanged, and so does a large one that was in flight */
	expect_u32("sane cwnd 37", lia_sane_cwnd(37, mpo), 37);
	expect_u32("sane cwnd at clamp", lia_sane_cwnd(LIA_CLAMP_MAX, 1), LIA_CLAMP_MAX);
	expect_u32("sane cwnd in flight", lia_sane_cwnd(3000000, 2000000), 3000000);
	expect_u32("sane cwnd wrapped", lia_sane_cwnd(wrapped, mpo), bound);
	/* max_packets_out near 2^32: the bound must not wrap to below cwnd */
	expect_u32("sane cwnd, huge mpo", lia_sane_cwnd(wrapped, 0xffffffffu), wrapped);
	/* ssthresh: infinite stays; 3/4 of a wrapped window does not */
	expect_u32("ssthresh infinite", lia_sane_ssthresh(0x7fffffffu, mpo), 0x7fffffffu);
	expect_u32("ssthresh 3/4 wrapped", lia_sane_ssthresh((wrapped >> 1) + (wrapped >> 2), mpo),
		   bound);
	expect_u32("ssthresh 40", lia_sane_ssthresh(40, mpo), 40);
	/* the ssthresh hook: reno's half, and never 2^31 - k/2 */
	expect_u32("ssthresh hook 37", lia_ssthresh_of(37, mpo), 18);
	expect_u32("ssthresh hook 3", lia_ssthresh_of(3, mpo), 2);
	expect_u32("ssthresh hook wrapped", lia_ssthresh_of(wrapped, mpo), bound / 2);
	/* the undo hook: reno's max, of sane values */
	expect_u32("undo 10/40", lia_undo_cwnd_of(10, 40, mpo), 40);
	expect_u32("undo 40/10", lia_undo_cwnd_of(40, 10, mpo), 40);
	expect_u32("undo wrapped cwnd", lia_undo_cwnd_of(wrapped, 40, mpo), bound);
	expect_u32("undo wrapped prior", lia_undo_cwnd_of(12, wrapped, mpo), bound);
}

static void random_cases(void)
{
	struct lia_sample s[LIA_MAX_SUBFLOWS];
	unsigned seed = 12345;

	for (int k = 0; k < 20000; k++) {
		int n = 1 + rand_r(&seed) % LIA_MAX_SUBFLOWS;

		memset(s, 0, sizeof(s));
		for (int i = 0; i < n; i++) {
			/* realistic ranges: cwnd 1..65535 segments, RTT 20 us .. 1 s */
			s[i].cwnd = 1 + rand_r(&seed) % 65535;
			s[i].rtt_us = 20 + rand_r(&seed) % 1000000;
		}
		expect_near("random", s, s[rand_r(&seed) % n].cwnd);
	}
}

static int eval(void)
{
	char line[1024];

	while (fgets(line, sizeof(line), stdin)) {
		struct lia_sample s[LIA_MAX_SUBFLOWS];
		char *p = line, *end;
		unsigned long cwnd = strtoul(p, &end, 10);
		int i = 0;

		if (end == p)
			continue;
		memset(s, 0, sizeof(s));
		for (p = end; i < LIA_MAX_SUBFLOWS; i++, p = end) {
			unsigned long c = strtoul(p, &end, 10), r;

			if (end == p)
				break;
			p = end;
			r = strtoul(p, &end, 10);
			if (end == p) {
				fprintf(stderr, "test_lia_math: a sample needs cwnd and rtt\n");
				return 2;
			}
			s[i] = (struct lia_sample){ (lia_u32)c, (lia_u32)r };
		}
		printf("%u\n", lia_acks_per_segment((lia_u32)cwnd, s));
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--eval"))
		return eval();
	fixed_cases();
	sanity_cases();
	random_cases();
	printf("test_lia_math: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
