// SPDX-License-Identifier: GPL-2.0
/* mptcp_lia: RFC 6356's Linked Increases Algorithm as a BPF tcp_congestion_ops.
 *
 * Upstream MPTCP has no coupled congestion control: every subflow runs its own reno or
 * cubic, so an MPTCP connection with n subflows through one bottleneck takes about n
 * TCP flows' share. LIA couples the congestion-avoidance increase of the subflows of one
 * MPTCP connection (the arithmetic: lia_math.h); slow start, loss response and undo stay
 * reno's, per subflow.
 *
 * Shared state: the subflows of a connection meet in lia_conns, keyed by the address of
 * their MPTCP socket (mptcp_subflow_context.conn, read through the subflow's ULP data).
 * Each subflow claims a slot there (its socket's address, cwnd, RTT, when it last wrote
 * them) and remembers the key and slot in its congestion-control private area. Slots go
 * in release(); the entry goes with the last slot. A socket that is not an MPTCP subflow
 * never gets a slot and runs plain reno; so does a subflow alone in its connection (the
 * arithmetic reduces to w = cwnd).
 *
 * Kernel facts relied on (6.18): struct_ops programs see the socket as a tcp_sock and may
 * write snd_cwnd, snd_cwnd_cnt, snd_ssthresh and icsk_ca_priv; tcp_slow_start and
 * tcp_cong_avoid_ai are kfuncs for BPF congestion controls; bpf_probe_read_kernel is
 * available to them.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

typedef __u32 lia_u32;
typedef __u64 lia_u64;
#include "lia_math.h"

char _license[] SEC("license") = "GPL";

/* a slot not written for this long is left out of the sum: a subflow that stopped
 * sending (idle, backup, dead path) must not hold the others' increase down forever */
#define LIA_STALE_NS (1000ULL * 1000 * 1000)

struct lia_slot {
	__u64 sk;       /* the subflow's socket address; 0: free */
	__u32 cwnd;     /* segments; 0 until the subflow has an RTT sample */
	__u32 rtt_us;   /* smoothed RTT */
	__u64 stamp_ns; /* bpf_ktime_get_ns() of the last write */
};

struct lia_conn {
	struct lia_slot slot[LIA_MAX_SUBFLOWS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64); /* the MPTCP socket's address */
	__type(value, struct lia_conn);
} lia_conns SEC(".maps");

/* per subflow, in icsk_ca_priv (104 bytes there; this needs 16) */
struct lia_priv {
	__u64 msk;  /* the key in lia_conns; 0: no slot */
	__u32 slot; /* the slot's index, valid when msk != 0 */
	__u32 pad;
};

/* how often a value that cannot be a window was met, for `bpftool map dump name lia_stats`:
 * where it was met tells which kernel path wrote it (docs/cc-lia.md, "cwnd jumps") */
enum {
	LIA_STAT_ACK = 0,      /* lia_sane() on an ACK corrected cwnd or ssthresh */
	LIA_STAT_SSTHRESH = 1, /* the ssthresh hook was asked with such a cwnd */
	LIA_STAT_UNDO = 2,     /* the undo_cwnd hook met such a cwnd or prior_cwnd */
	LIA_STAT_N
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LIA_STAT_N);
	__type(key, __u32);
	__type(value, __u64);
} lia_stats SEC(".maps");

static __always_inline void lia_count(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&lia_stats, &what);

	if (n)
		__sync_fetch_and_add(n, 1);
}

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct lia_priv *lia_priv(const struct sock *sk)
{
	return (struct lia_priv *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* the MPTCP socket of a subflow, 0 for anything else */
static __always_inline __u64 lia_msk_of(struct sock *sk)
{
	struct mptcp_subflow_context *ctx;

	if (!tcp_sk(sk)->is_mptcp)
		return 0;
	ctx = ((struct inet_connection_sock *)sk)->icsk_ulp_data;
	if (!ctx)
		return 0;
	return (__u64)BPF_CORE_READ(ctx, conn);
}

/* claim (or find) this subflow's slot in its connection's entry */
static __always_inline struct lia_conn *lia_attach(struct sock *sk, struct lia_priv *p)
{
	struct lia_conn zero = {}, *conn;
	__u64 me = (__u64)sk, msk = lia_msk_of(sk);
	int i;

	if (!msk)
		return NULL;
	conn = bpf_map_lookup_elem(&lia_conns, &msk);
	if (!conn) {
		/* BPF_NOEXIST: a sibling subflow creating it at the same time wins, we use its entry */
		bpf_map_update_elem(&lia_conns, &msk, &zero, BPF_NOEXIST);
		conn = bpf_map_lookup_elem(&lia_conns, &msk);
		if (!conn)
			return NULL; /* the map is full: this subflow runs uncoupled (reno) */
	}
	for (i = 0; i < LIA_MAX_SUBFLOWS; i++) {
		if (conn->slot[i].sk == me)
			goto found;
	}
	for (i = 0; i < LIA_MAX_SUBFLOWS; i++) {
		if (__sync_val_compare_and_swap(&conn->slot[i].sk, 0, me) == 0)
			goto found;
	}
	return NULL; /* more subflows than slots: this one runs uncoupled */
found:
	p->msk = msk;
	p->slot = i;
	return conn;
}

/* this subflow's connection entry, its own slot refreshed; NULL: runs uncoupled */
static __always_inline struct lia_conn *lia_track(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct lia_priv *p = lia_priv(sk);
	struct lia_conn *conn = NULL;
	struct lia_slot *sl;
	__u32 rtt_us, slot;
	__u64 msk;

	if (p->msk) {
		msk = p->msk; /* map keys come from the stack, not from the socket */
		conn = bpf_map_lookup_elem(&lia_conns, &msk);
		slot = p->slot;
		/* the entry went while we were between ACKs (the last sibling's release
		 * deleted it) or the slot is someone else's: attach again */
		if (!conn || slot >= LIA_MAX_SUBFLOWS || conn->slot[slot].sk != (__u64)sk) {
			p->msk = 0;
			conn = NULL;
		}
	}
	if (!conn)
		conn = lia_attach(sk, p);
	if (!conn)
		return NULL;
	slot = p->slot;
	if (slot >= LIA_MAX_SUBFLOWS)
		return NULL;
	sl = &conn->slot[slot];
	rtt_us = tp->srtt_us >> 3; /* srtt_us holds 8 times the smoothed RTT */
	sl->rtt_us = rtt_us;
	sl->cwnd = rtt_us ? tp->snd_cwnd : 0;
	sl->stamp_ns = bpf_ktime_get_ns();
	return conn;
}

static __always_inline void lia_detach(struct sock *sk)
{
	struct lia_priv *p = lia_priv(sk);
	struct lia_conn *conn;
	__u32 slot = p->slot;
	__u64 msk = p->msk;
	int i;

	if (!msk)
		return;
	conn = bpf_map_lookup_elem(&lia_conns, &msk);
	if (conn && slot < LIA_MAX_SUBFLOWS && conn->slot[slot].sk == (__u64)sk) {
		conn->slot[slot].cwnd = 0;
		conn->slot[slot].stamp_ns = 0;
		__sync_val_compare_and_swap(&conn->slot[slot].sk, (__u64)sk, 0);
		for (i = 0; i < LIA_MAX_SUBFLOWS; i++) {
			if (conn->slot[i].sk)
				goto out;
		}
		/* a sibling attaching right now finds its entry gone on its next ACK and
		 * makes a new one (lia_track) */
		bpf_map_delete_elem(&lia_conns, &msk);
	}
out:
	p->msk = 0;
}

/* Observed on this kernel (6.18) with MPTCP subflows under this congestion control:
 * now and then a subflow's cwnd jumps from tens of segments to above 2^30 between two
 * calls of its hooks, and ssthresh follows at 3/4 of it. The subflow then sends whatever
 * the MPTCP scheduler gives it, every loss only halves the window, and seconds of
 * retransmission storm follow. docs/cc-lia.md traces it: the first large value is
 * written by the kernel (a u32 wrap of packets in flight is the one write that can do
 * it), the 3/4 and the later "about 2^31" are the kernel's arithmetic on it, partly
 * through this program's ssthresh and undo_cwnd answers. The hooks therefore never
 * answer from such a value (lia_ssthresh_of, lia_undo_cwnd_of) and every ACK brings
 * cwnd and a finite ssthresh back to the bound reno keeps (lia_math.h); a window that
 * grew by ACKs never reaches it. */
static __always_inline void lia_sane(struct tcp_sock *tp)
{
	__u32 cwnd = lia_sane_cwnd(tp->snd_cwnd, tp->max_packets_out);
	__u32 ssthresh = lia_sane_ssthresh(tp->snd_ssthresh, tp->max_packets_out);

	if (cwnd == tp->snd_cwnd && ssthresh == tp->snd_ssthresh)
		return;
	tp->snd_cwnd = cwnd;
	tp->snd_ssthresh = ssthresh;
	lia_count(LIA_STAT_ACK);
}

/* tcp_is_cwnd_limited() of include/net/tcp.h */
static __always_inline bool lia_cwnd_limited(struct tcp_sock *tp)
{
	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (tp->snd_cwnd < tp->snd_ssthresh)
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

SEC("struct_ops/lia_init")
void BPF_PROG(lia_init, struct sock *sk)
{
	struct lia_priv *p = lia_priv(sk);

	p->msk = 0;
	p->slot = 0;
	lia_track(sk); /* a subflow established with a known RTT counts from now */
}

SEC("struct_ops/lia_release")
void BPF_PROG(lia_release, struct sock *sk)
{
	lia_detach(sk);
}

SEC("struct_ops/lia_pkts_acked")
void BPF_PROG(lia_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	/* every ACK of new data, in recovery too: the siblings see this subflow's cwnd
	 * as it shrinks, not only when it grows again */
	lia_sane(tcp_sk(sk));
	lia_track(sk);
}

SEC("struct_ops/lia_cong_avoid")
void BPF_PROG(lia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct lia_sample s[LIA_MAX_SUBFLOWS] = {};
	struct lia_conn *conn;
	__u64 now;
	__u32 w;
	int i;

	lia_sane(tp);
	if (!lia_cwnd_limited(tp))
		return;
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		/* slow start is reno's, per subflow (RFC 6356 couples only the increase) */
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			goto out;
	}
	w = tp->snd_cwnd;
	conn = lia_track(sk);
	if (conn) {
		now = bpf_ktime_get_ns();
		for (i = 0; i < LIA_MAX_SUBFLOWS; i++) {
			struct lia_slot *sl = &conn->slot[i];

			if (!sl->sk || sl->stamp_ns + LIA_STALE_NS < now)
				continue;
			s[i].cwnd = sl->cwnd;
			s[i].rtt_us = sl->rtt_us;
		}
		w = lia_acks_per_segment(tp->snd_cwnd, s);
	}
	tcp_cong_avoid_ai(tp, w, acked);
out:
	lia_track(sk);
}

/* reno's: half the window, at least 2 segments; never half of a wrapped window, which
 * is just below 2^31 and which tcp_end_cwnd_reduction would copy into cwnd */
SEC("struct_ops/lia_ssthresh")
__u32 BPF_PROG(lia_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (lia_sane_cwnd(tp->snd_cwnd, tp->max_packets_out) != tp->snd_cwnd)
		lia_count(LIA_STAT_SSTHRESH);
	return lia_ssthresh_of(tp->snd_cwnd, tp->max_packets_out);
}

/* reno's: back to the window before the reduction that turned out spurious; the kernel
 * writes the answer into cwnd as it is, so a wrapped cwnd or prior_cwnd is not handed back */
SEC("struct_ops/lia_undo_cwnd")
__u32 BPF_PROG(lia_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 mpo = tp->max_packets_out;

	if (lia_sane_cwnd(tp->snd_cwnd, mpo) != tp->snd_cwnd ||
	    lia_sane_cwnd(tp->prior_cwnd, mpo) != tp->prior_cwnd)
		lia_count(LIA_STAT_UNDO);
	return lia_undo_cwnd_of(tp->snd_cwnd, tp->prior_cwnd, mpo);
}

SEC(".struct_ops")
struct tcp_congestion_ops mptcp_lia = {
	.init = (void *)lia_init,
	.release = (void *)lia_release,
	.pkts_acked = (void *)lia_pkts_acked,
	.cong_avoid = (void *)lia_cong_avoid,
	.ssthresh = (void *)lia_ssthresh,
	.undo_cwnd = (void *)lia_undo_cwnd,
	.name = "mptcp_lia",
};
