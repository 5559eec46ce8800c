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
};

/* Returns 0, or -1 when cap is 0 or memory is short. */
int dl_sched_init(struct dl_sched *s, uint32_t cap, uint64_t delay_ns, uint64_t jitter_ns,
		  uint64_t seed);
void dl_sched_free(struct dl_sched *s);

/* Adds a rate stage: rate_bps > 0, limit_bytes 0 for no limit. */
void dl_sched_set_rate(struct dl_sched *s, uint64_t rate_bps, uint64_t limit_bytes);

/* The jittered one-way delay for the next packet, already clipped at >= 0. */
uint64_t dl_sched_draw_delay(struct dl_sched *s);

/* Holds a packet of len bytes on the wire that arrived at arrival_ns. Returns
 * 0, -1 when the FIFO is full (the caller must then drop the packet: never pass
 * it undelayed), or -2 when the rate stage's queue limit refuses it (drop). */
int dl_sched_push(struct dl_sched *s, uint32_t id, uint32_t len, uint64_t arrival_ns);

/* The oldest held packet, or NULL. */
const struct dl_entry *dl_sched_head(const struct dl_sched *s);

/* Pops the head into *out when it is due at now_ns. Returns 1 if popped, 0 if not. */
int dl_sched_pop_due(struct dl_sched *s, uint64_t now_ns, struct dl_entry *out);

/* Nanoseconds until the head is due (0 if due now), or -1 when empty. */
int64_t dl_sched_wait_ns(const struct dl_sched *s, uint64_t now_ns);

#endif
