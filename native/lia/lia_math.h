/* The coupled increase of LIA (RFC 6356, section 3) in integer arithmetic.
 *
 * Shared by the BPF congestion control (mptcp_lia.bpf.c) and the host unit test
 * (test_lia_math.c), so the test checks the very code the kernel runs. It needs only
 * fixed-width integer types: the includer defines lia_u32 and lia_u64 first (BPF: __u32,
 * __u64 from vmlinux.h; host: uint32_t, uint64_t).
 *
 * RFC 6356 increases subflow i, per ACKed segment in congestion avoidance, by
 *     min(alpha / cwnd_total, 1 / cwnd_i),
 *     alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) / (sum_i cwnd_i / rtt_i)^2.
 * Reno-style code grows cwnd by one segment every w ACKed segments, so we compute
 *     w = max(cwnd_i, cwnd_total / alpha)
 * and cwnd_total / alpha = (sum_i cwnd_i / rtt_i)^2 / max_i(cwnd_i / rtt_i^2)
 *                        = (sum_i cwnd_i * rtt_b / rtt_i)^2 / cwnd_b
 * where b is the subflow maximising cwnd_i / rtt_i^2. cwnd_total cancels, the RTT scale
 * cancels (any RTT unit works) and there is one division per subflow: no fractional alpha
 * to keep. Every term cwnd_i * rtt_b / rtt_i is at most max(cwnd_i, cwnd_b) (b's choice
 * bounds it), so the sum stays small.
 *
 * Bounds (why these): cwnd and RTT are clamped to 2^21 (2 million segments; 2.1 s in
 * microseconds) so that cwnd * rtt^2 < 2^63 in the comparison that picks b. An RTT above
 * 2.1 s counts as 2.1 s; that only matters if two subflows are both above it.
 */
#ifndef LIA_MATH_H
#define LIA_MATH_H

#define LIA_MAX_SUBFLOWS 8
#define LIA_CLAMP_MAX (1u << 21)
/* fractional bits of the sum: the truncation of each term costs at most 2^-10 of a segment */
#define LIA_FRAC_BITS 10
/* the largest answer (w is a u32 in the kernel): no increase in practice */
#define LIA_W_MAX 0xffffffffu

struct lia_sample {
	lia_u32 cwnd;   /* segments; 0: this slot is not in use */
	lia_u32 rtt_us; /* smoothed RTT, any unit as long as every sample uses the same */
};

static inline lia_u64 lia_clamp(lia_u32 v)
{
	if (v < 1)
		return 1;
	return v > LIA_CLAMP_MAX ? LIA_CLAMP_MAX : v;
}

/* cwnd_total / alpha: the number of ACKed segments after which a subflow of this
 * connection may grow by one segment, before the min() with its own cwnd. Samples with
 * cwnd 0 are skipped; with no usable sample it answers 0. */
static inline lia_u64 lia_coupled_acks(const struct lia_sample *s)
{
	lia_u64 cb = 0, rb = 0, x = 0, q;
	int i;

	for (i = 0; i < LIA_MAX_SUBFLOWS; i++) {
		lia_u64 c, r;

		if (!s[i].cwnd)
			continue;
		c = lia_clamp(s[i].cwnd);
		r = lia_clamp(s[i].rtt_us);
		/* c / r^2 > cb / rb^2, cross-multiplied */
		if (!cb || c * rb * rb > cb * r * r) {
			cb = c;
			rb = r;
		}
	}
	if (!cb)
		return 0;
	for (i = 0; i < LIA_MAX_SUBFLOWS; i++) {
		if (!s[i].cwnd)
			continue;
		x += (lia_clamp(s[i].cwnd) << LIA_FRAC_BITS) * rb / lia_clamp(s[i].rtt_us);
	}
	/* x^2 / cb in two steps: x / cb keeps at least LIA_FRAC_BITS bits (x >= cb << 10).
	 * Each term is at most 2^31, so x < 2^34 and q <= x. Below 2^32 the product q * x
	 * fits in 64 bits as it is; above, x loses 10 bits it can spare (x >> 10 >= 2^22).
	 * (An overflow test with a division makes clang emit a 128-bit multiply, which BPF
	 * does not have.) */
	q = x / cb;
	if (x < (1ULL << 32))
		q = (q * x) >> (2 * LIA_FRAC_BITS);
	else
		q = (q * (x >> LIA_FRAC_BITS)) >> LIA_FRAC_BITS;
	return q > LIA_W_MAX ? LIA_W_MAX : q;
}

/* w of a subflow whose own cwnd is cwnd: max(cwnd, cwnd_total / alpha) */
static inline lia_u32 lia_acks_per_segment(lia_u32 cwnd, const struct lia_sample *s)
{
	lia_u64 coupled = lia_coupled_acks(s);

	return coupled > cwnd ? (lia_u32)coupled : cwnd;
}

/* ---- Values the hooks hand back to the kernel (docs/cc-lia.md, "cwnd jumps").
 * The kernel writes cwnd = tcp_packets_in_flight() + n in tcp_enter_loss and
 * tcp_cwnd_reduction; tcp_packets_in_flight() is a u32 difference, so counters out of
 * step give 2^32 - k. From such a cwnd W the kernel's own arithmetic spreads the damage
 * through this program's answers: ssthresh() returned W / 2 (just below 2^31, which
 * tcp_end_cwnd_reduction copies into cwnd) and undo_cwnd() max(W, prior_cwnd). A window
 * above LIA_CLAMP_MAX that is also beyond the bound reno keeps (twice what was in flight
 * at most, plus slack) is taken as such a value, never as a window. */
#define LIA_SSTHRESH_INFINITE 0x7fffffffu /* TCP_INFINITE_SSTHRESH: no loss yet */

/* cwnd, or the bound when cwnd cannot be a window (the bound is then below cwnd, so
 * it fits; computed in 64 bits so that no max_packets_out wraps it) */
static inline lia_u32 lia_sane_cwnd(lia_u32 cwnd, lia_u32 max_packets_out)
{
	lia_u64 bound = 2ULL * max_packets_out + 16;

	return cwnd > LIA_CLAMP_MAX && cwnd > bound ? (lia_u32)bound : cwnd;
}

/* ssthresh, or the bound when it is finite yet beyond any window (tcp_current_ssthresh's
 * 3/4 of a wrapped cwnd); the infinite one is slow start's "no loss yet" and stays */
static inline lia_u32 lia_sane_ssthresh(lia_u32 ssthresh, lia_u32 max_packets_out)
{
	if (ssthresh == LIA_SSTHRESH_INFINITE)
		return ssthresh;
	return lia_sane_cwnd(ssthresh, max_packets_out);
}

/* the ssthresh hook: reno's half of the window, at least 2, of a sane window */
static inline lia_u32 lia_ssthresh_of(lia_u32 cwnd, lia_u32 max_packets_out)
{
	lia_u32 half = lia_sane_cwnd(cwnd, max_packets_out) >> 1;

	return half > 2 ? half : 2;
}

/* the undo_cwnd hook: reno's max(cwnd, prior_cwnd), of sane windows */
static inline lia_u32 lia_undo_cwnd_of(lia_u32 cwnd, lia_u32 prior_cwnd, lia_u32 max_packets_out)
{
	lia_u32 c = lia_sane_cwnd(cwnd, max_packets_out);
	lia_u32 p = lia_sane_cwnd(prior_cwnd, max_packets_out);

	return c > p ? c : p;
}

#endif
