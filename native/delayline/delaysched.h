/*
 * delaysched: the scheduling core of mptcplab-delayline, kept free of any
 * netlink code so it can be unit-tested with a fake clock.
 *
 * A FIFO of held packets, each with the absolute time (CLOCK_MONOTONIC, ns)
 * at which it is to be released. Jitter never reorders: a packet's release
 * time is
 *     max(arrival + max(0, delay + U[-jitter, +jitter]), previous release)
 * so release times are non-decreasing and the head of the FIFO is always the
 * next packet due. That is also what makes one batch verdict ("accept every
 * id up to N") correct for all due packets.
 *
 * Optionally the link's rate and queue limit too (dl_sched_set_rate), as a
 * virtual drop-tail queue in front of the delay: a packet starts serializing
 * when the previous one is done, takes wire_len * 8 / rate, then the delay;
 * it is refused (-2: the caller drops it, a loss the link model configured)
 * when the bytes still queued ahead of it plus its own exceed the limit. This
 * replaces tbf at the sender, whose watchdog timer fires once per packet at
 * line rate (measured: the main cost at 400 Mbit/s, see delayline.c).
 *
 * Or, excluding the rate stage, a trace stage (dl_sched_set_trace): the link's
 * capacity replayed from a packet-delivery trace in Mahimahi's format (one
 * line per delivery opportunity, its time in ms since the trace's start; the
 * same ms on n lines is n opportunities; the trace loops with a period of its
 * last time). Each opportunity may deliver DL_TRACE_OPP_BYTES; a packet larger
 * than the credit left continues in the next opportunity and leaves at the
 * one that carries its last byte; credit an opportunity cannot use because
 * the stage's queue is empty is lost. A packet arriving at t uses only
 * opportunities strictly after t (Mahimahi burns every opportunity due at or
 * before the current time before it enqueues). Because the opportunities are
 * known in advance and the queue is FIFO, each packet's departure is computed
 * when it is pushed, as the rate stage does: release times stay non-decreasing
 * and no timer per opportunity is needed. The drop-tail limits (bytes and/or
 * packets) count the packets waiting, not the one being delivered, as
 * Mahimahi's droptail queue does.
 */
#ifndef MPTCPLAB_DELAYSCHED_H
#define MPTCPLAB_DELAYSCHED_H

#include <stddef.h>
#include <stdint.h>

struct dl_entry {
	uint64_t release_ns; /* absolute CLOCK_MONOTONIC time */
	uint32_t id;         /* NFQUEUE packet id */
	uint32_t len;        /* packet length in bytes (for stats) */
};

struct dl_sched {
	struct dl_entry *ring;
	uint32_t cap;
	uint32_t head;  /* index of the oldest entry */
	uint32_t count; /* entries held */
	uint32_t max_held;
	uint64_t delay_ns;
	uint64_t jitter_ns;
	uint64_t last_release_ns; /* release time of the newest entry ever pushed */
	uint64_t rng;             /* splitmix64 state: jitter is reproducible per seed */
	uint64_t rate_bps;        /* 0: no rate stage */
	uint64_t limit_bytes;     /* rate stage queue limit, 0: unlimited */
	uint64_t next_free_ns;    /* when the rate stage has sent everything pushed */
	uint64_t rate_drops;      /* refused by the rate stage's queue limit */
	struct dl_trace *trace;   /* NULL: no trace stage */
};

/* Mahimahi's PACKET_SIZE: one MTU-sized packet (1500) plus the 4-byte tun header
 * its packets carry; the delay line counts a packet as its IP length + 4, so a
 * full-size packet takes exactly one opportunity, as under mm-link. */
#define DL_TRACE_OPP_BYTES 1504u
#define DL_TRACE_PKT_OVERHEAD 4u

struct dl_trace_pkt {
	uint64_t start_ns;  /* the opportunity its first byte used */
	uint64_t depart_ns; /* the opportunity its last byte used */
	uint32_t len;
};

struct dl_trace {
	uint32_t *ms;        /* opportunity times (ms), non-decreasing, ms[n-1] > 0 */
	uint32_t n;
	uint64_t period_ns;  /* ms[n-1] in ns: the loop */
	uint64_t start_ns;   /* absolute time at which the trace is at offset_ns */
	uint64_t offset_ns;  /* start offset into the trace, < period_ns */
	uint64_t limit_bytes, limit_packets; /* drop-tail limits, 0: none */
	/* opportunities are numbered across loops: index a is loop a / n, line a % n */
	uint64_t next;       /* first opportunity not yet fully used or given up */
	uint32_t left;       /* credit left in opportunity `next` */
	/* packets not yet delivered (as of the latest push), FIFO */
	struct dl_trace_pkt *q;
	uint32_t qcap, qhead, qcount;
	uint64_t qbytes;
	/* what the stage did */
	uint64_t opp_used;      /* opportunities that carried at least one byte */
	uint64_t opp_wasted;    /* opportunities that passed with an empty queue */
	/* opp_wasted when the drop-tail limits first and last refused a packet: what passed
	 * unused in between is credit lost while the link was overloaded (none is due: an
	 * overloaded queue is never empty), unlike idle time before or after a flow */
	uint64_t wasted_at_first_drop, wasted_at_last_drop;
	uint64_t wasted_bytes;  /* credit lost: idle opportunities and unused remainders */
	uint64_t bytes;         /* bytes delivered (IP length + 4 per packet) */
	uint64_t drops, drop_bytes; /* refused by the drop-tail limits */
	uint64_t switches;          /* dl_sched_switch_trace calls that took effect */
};

/* Returns 0, or -1 when cap is 0 or memory is short. */
int dl_sched_init(struct dl_sched *s, uint32_t cap, uint64_t delay_ns, uint64_t jitter_ns,
		  uint64_t seed);
void dl_sched_free(struct dl_sched *s);

/* Adds a rate stage: rate_bps > 0, limit_bytes 0 for no limit. */
void dl_sched_set_rate(struct dl_sched *s, uint64_t rate_bps, uint64_t limit_bytes);

/* Checks a trace: 0, or -1 with a one-line reason in err (n is 0, a time
 * decreases, or the last time is 0: a trace must last). */
int dl_trace_check(const uint32_t *ms, uint32_t n, char *err, size_t errlen);

/* Reads a trace file (one non-negative integer per line, the format above) into
 * a malloc'd array. Returns 0, or -1 with "FILE:LINE: problem" in err. */
int dl_trace_load(const char *path, uint32_t **ms, uint32_t *n, char *err, size_t errlen);

/* Adds a trace stage (instead of a rate stage): opportunities from ms[0..n-1]
 * (copied), trace time offset_ms at start_ns, drop-tail limits in bytes and
 * packets (0: none). Returns 0, or -1 (bad trace, rate stage set, no memory). */
int dl_sched_set_trace(struct dl_sched *s, const uint32_t *ms, uint32_t n, uint64_t offset_ms,
		       uint64_t start_ns, uint64_t limit_bytes, uint64_t limit_packets);

/* Switches the trace stage to another trace at now_ns (a timeline trace switch:
 * mobility): from then on the link's capacity is ms[0..n-1] (copied), at trace
 * time offset_ms at now_ns, looped. Packets already accepted keep the departures
 * the old trace gave them (at most the queue's content: the backlog drains as the
 * old trace scheduled it); the new trace's first usable opportunity is the first
 * strictly after both now_ns and the last of those departures. The drop-tail
 * limits and the counters carry on. Returns 0, or -1 (no trace stage, bad trace,
 * no memory; the old trace then stays). */
int dl_sched_switch_trace(struct dl_sched *s, const uint32_t *ms, uint32_t n, uint64_t offset_ms, uint64_t now_ns);

/* Absolute time of trace opportunity number a (see struct dl_trace). */
uint64_t dl_trace_opp_ns(const struct dl_trace *t, uint64_t a);

/* Counts the opportunities that passed unused up to now_ns (the queue is empty
 * after the last departure): for the stats at the end. */
void dl_trace_settle(struct dl_trace *t, uint64_t now_ns);

/* The jittered one-way delay for the next packet, already clipped at >= 0. */
uint64_t dl_sched_draw_delay(struct dl_sched *s);

/* Holds a packet of len bytes on the wire that arrived at arrival_ns. Returns
 * 0, -1 when the FIFO is full (the caller must then drop the packet: never pass
 * it undelayed), or -2 when the rate or trace stage's queue limit refuses it
 * (drop). With a trace stage, len is the packet's IP length + DL_TRACE_PKT_OVERHEAD. */
int dl_sched_push(struct dl_sched *s, uint32_t id, uint32_t len, uint64_t arrival_ns);

/* The oldest held packet, or NULL. */
const struct dl_entry *dl_sched_head(const struct dl_sched *s);

/* Pops the head into *out when it is due at now_ns. Returns 1 if popped, 0 if not. */
int dl_sched_pop_due(struct dl_sched *s, uint64_t now_ns, struct dl_entry *out);

/* Nanoseconds until the head is due (0 if due now), or -1 when empty. */
int64_t dl_sched_wait_ns(const struct dl_sched *s, uint64_t now_ns);

#endif
