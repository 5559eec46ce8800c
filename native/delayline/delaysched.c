/* delaysched: FIFO of held packets with non-decreasing release times. See delaysched.h. */
#include "delaysched.h"

#include <stdlib.h>
#include <string.h>

int dl_sched_init(struct dl_sched *s, uint32_t cap, uint64_t delay_ns, uint64_t jitter_ns,
		  uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	if (cap == 0)
		return -1;
	s->ring = calloc(cap, sizeof(*s->ring));
	if (!s->ring)
		return -1;
	s->cap = cap;
	s->delay_ns = delay_ns;
	s->jitter_ns = jitter_ns;
	s->rng = seed;
	return 0;
}

void dl_sched_free(struct dl_sched *s)
{
	free(s->ring);
	s->ring = NULL;
	s->cap = s->count = s->head = 0;
}

/* splitmix64: tiny, fast, good enough for delay jitter, and seedable so a
 * run's jitter sequence can be reproduced. */
static uint64_t next_u64(struct dl_sched *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t dl_sched_draw_delay(struct dl_sched *s)
{
	if (s->jitter_ns == 0)
		return s->delay_ns;
	/* uniform integer in [-J, +J]; the modulo bias is below 2^-40 for any
	 * realistic J (J < 2^24 ns) and irrelevant for emulation */
	uint64_t span = 2 * s->jitter_ns + 1;
	int64_t j = (int64_t)(next_u64(s) % span) - (int64_t)s->jitter_ns;
	int64_t d = (int64_t)s->delay_ns + j;
	return d < 0 ? 0 : (uint64_t)d;
}

void dl_sched_set_rate(struct dl_sched *s, uint64_t rate_bps, uint64_t limit_bytes)
{
	s->rate_bps = rate_bps;
	s->limit_bytes = limit_bytes;
}

int dl_sched_push(struct dl_sched *s, uint32_t id, uint32_t len, uint64_t arrival_ns)
{
	if (s->count == s->cap)
		return -1;
	uint64_t sent = arrival_ns;
	if (s->rate_bps) {
		uint64_t start = s->next_free_ns > arrival_ns ? s->next_free_ns : arrival_ns;
		/* bytes still queued ahead of this packet in the rate stage */
		unsigned __int128 ahead = (unsigned __int128)(start - arrival_ns) * s->rate_bps / 8000000000ULL;
		if (s->limit_bytes && ahead + len > s->limit_bytes) {
			s->rate_drops++;
			return -2;
		}
		sent = start + (uint64_t)((unsigned __int128)len * 8000000000ULL / s->rate_bps);
		s->next_free_ns = sent;
	}
	uint64_t rel = sent + dl_sched_draw_delay(s);
	/* no reordering: never release before the packet ahead of us */
	if (rel < s->last_release_ns)
		rel = s->last_release_ns;
	s->last_release_ns = rel;
	uint32_t tail = s->head + s->count;
	if (tail >= s->cap)
		tail -= s->cap;
	s->ring[tail].release_ns = rel;
	s->ring[tail].id = id;
	s->ring[tail].len = len;
	s->count++;
	if (s->count > s->max_held)
		s->max_held = s->count;
	return 0;
}

const struct dl_entry *dl_sched_head(const struct dl_sched *s)
{
	return s->count ? &s->ring[s->head] : NULL;
}

int dl_sched_pop_due(struct dl_sched *s, uint64_t now_ns, struct dl_entry *out)
{
	if (!s->count || s->ring[s->head].release_ns > now_ns)
		return 0;
	*out = s->ring[s->head];
	s->head = (s->head + 1 == s->cap) ? 0 : s->head + 1;
	s->count--;
	return 1;
}

int64_t dl_sched_wait_ns(const struct dl_sched *s, uint64_t now_ns)
{
	if (!s->count)
		return -1;
	uint64_t rel = s->ring[s->head].release_ns;
	return rel > now_ns ? (int64_t)(rel - now_ns) : 0;
}
