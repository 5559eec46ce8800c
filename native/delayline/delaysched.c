/* delaysched: FIFO of held packets with non-decreasing release times. See delaysched.h. */
#include "delaysched.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_MS 1000000ULL

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

static void trace_free(struct dl_trace *t)
{
	if (!t)
		return;
	free(t->ms);
	free(t->q);
	free(t);
}

void dl_sched_free(struct dl_sched *s)
{
	trace_free(s->trace);
	s->trace = NULL;
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
	if (s->trace)
		return; /* the stages exclude each other (dl_sched_set_trace refuses the other way) */
	s->rate_bps = rate_bps;
	s->limit_bytes = limit_bytes;
}

int dl_trace_check(const uint32_t *ms, uint32_t n, char *err, size_t errlen)
{
	if (n == 0) {
		snprintf(err, errlen, "no delivery opportunities (empty trace)");
		return -1;
	}
	for (uint32_t i = 1; i < n; i++) {
		if (ms[i] < ms[i - 1]) {
			snprintf(err, errlen, "line %u: %u ms is before the previous line's %u ms (times must not decrease)",
				 i + 1, ms[i], ms[i - 1]);
			return -1;
		}
	}
	if (ms[n - 1] == 0) {
		snprintf(err, errlen, "the last time is 0 ms: a trace must last (its period is its last time)");
		return -1;
	}
	return 0;
}

int dl_trace_load(const char *path, uint32_t **out, uint32_t *nout, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	uint32_t *ms = NULL, n = 0, cap = 0, line = 0;
	char buf[64];
	char why[160];
	int rc = -1;
	while (fgets(buf, sizeof(buf), f)) {
		line++;
		size_t l = strlen(buf);
		if (l == sizeof(buf) - 1 && buf[l - 1] != '\n') {
			snprintf(err, errlen, "%s:%u: line too long for a time in ms", path, line);
			goto out;
		}
		while (l && (buf[l - 1] == '\n' || buf[l - 1] == '\r'))
			buf[--l] = 0;
		if (!l) {
			snprintf(err, errlen, "%s:%u: empty line", path, line);
			goto out;
		}
		uint64_t v = 0;
		for (size_t i = 0; i < l; i++) {
			if (buf[i] < '0' || buf[i] > '9') {
				snprintf(err, errlen, "%s:%u: '%s' is not a time in ms (a non-negative integer)", path, line, buf);
				goto out;
			}
			if (v <= UINT32_MAX) /* stops growing once too large: no overflow */
				v = v * 10 + (uint64_t)(buf[i] - '0');
		}
		if (v > UINT32_MAX) {
			snprintf(err, errlen, "%s:%u: %s ms is too large", path, line, buf);
			goto out;
		}
		if (n && v < ms[n - 1]) {
			snprintf(err, errlen, "%s:%u: %s ms is before the previous line's %u ms (times must not decrease)",
				 path, line, buf, ms[n - 1]);
			goto out;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			uint32_t *nm = realloc(ms, (size_t)cap * sizeof(*ms));
			if (!nm) {
				snprintf(err, errlen, "%s: out of memory", path);
				goto out;
			}
			ms = nm;
		}
		ms[n++] = (uint32_t)v;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		goto out;
	}
	if (dl_trace_check(ms, n, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		goto out;
	}
	*out = ms;
	*nout = n;
	ms = NULL;
	rc = 0;
out:
	free(ms);
	fclose(f);
	return rc;
}

int dl_sched_set_trace(struct dl_sched *s, const uint32_t *ms, uint32_t n, uint64_t offset_ms,
		       uint64_t start_ns, uint64_t limit_bytes, uint64_t limit_packets)
{
	char why[160];
	if (s->rate_bps || s->trace || dl_trace_check(ms, n, why, sizeof(why)) < 0)
		return -1;
	struct dl_trace *t = calloc(1, sizeof(*t));
	if (!t)
		return -1;
	t->ms = malloc((size_t)n * sizeof(*ms));
	/* the stage's FIFO: packets can leave the delay FIFO (released) before a later
	 * arrival retires them here, so give it room beyond the delay FIFO's */
	t->qcap = s->cap * 2;
	t->q = calloc(t->qcap, sizeof(*t->q));
	if (!t->ms || !t->q) {
		trace_free(t);
		return -1;
	}
	memcpy(t->ms, ms, (size_t)n * sizeof(*ms));
	t->n = n;
	t->period_ns = (uint64_t)ms[n - 1] * NS_PER_MS;
	t->offset_ns = offset_ms * NS_PER_MS % t->period_ns;
	t->start_ns = start_ns;
	t->limit_bytes = limit_bytes;
	t->limit_packets = limit_packets;
	t->left = DL_TRACE_OPP_BYTES;
	s->trace = t;
	/* nothing before the start: the first opportunity is the first after it */
	dl_trace_settle(t, start_ns);
	t->opp_wasted = t->wasted_bytes = 0;
	return 0;
}

/* trace time (ns since the trace's time 0, counting loops) at absolute time now */
static uint64_t trace_time(const struct dl_trace *t, uint64_t now)
{
	return (now > t->start_ns ? now - t->start_ns : 0) + t->offset_ns;
}

uint64_t dl_trace_opp_ns(const struct dl_trace *t, uint64_t a)
{
	uint64_t loop = a / t->n, k = a % t->n;
	return t->start_ns + loop * t->period_ns + (uint64_t)t->ms[k] * NS_PER_MS - t->offset_ns;
}

/* The first opportunity strictly after trace time tt. */
static uint64_t first_after(const struct dl_trace *t, uint64_t tt)
{
	uint64_t loop = tt / t->period_ns, r = tt % t->period_ns;
	/* upper bound: first line whose time is > r */
	uint32_t lo = 0, hi = t->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if ((uint64_t)t->ms[mid] * NS_PER_MS > r)
			hi = mid;
		else
			lo = mid + 1;
	}
	/* lo == n: the next loop's first line (its time, loop + 1 periods, is > tt) */
	return loop * t->n + lo;
}

void dl_trace_settle(struct dl_trace *t, uint64_t now_ns)
{
	uint64_t first = first_after(t, trace_time(t, now_ns));
	if (t->next >= first)
		return;
	/* the queue was empty from opportunity `next` on: its rest and every
	 * opportunity up to now pass unused */
	if (t->left < DL_TRACE_OPP_BYTES) {
		t->wasted_bytes += t->left;
		t->next++;
	}
	t->opp_wasted += first - t->next;
	t->wasted_bytes += (first - t->next) * DL_TRACE_OPP_BYTES;
	t->next = first;
	t->left = DL_TRACE_OPP_BYTES;
}

int dl_sched_switch_trace(struct dl_sched *s, const uint32_t *ms, uint32_t n, uint64_t offset_ms, uint64_t now_ns)
{
	char why[160];
	struct dl_trace *t = s->trace;
	if (!t || dl_trace_check(ms, n, why, sizeof(why)) < 0)
		return -1;
	uint32_t *copy = malloc((size_t)n * sizeof(*ms));
	if (!copy)
		return -1;
	memcpy(copy, ms, (size_t)n * sizeof(*ms));
	/* the old trace's unused credit up to now is lost, as if its queue had emptied */
	dl_trace_settle(t, now_ns);
	/* the backlog keeps its departures: the new trace starts after the last of them */
	uint64_t busy = now_ns;
	if (t->qcount) {
		uint32_t last = t->qhead + t->qcount - 1;
		if (last >= t->qcap)
			last -= t->qcap;
		if (t->q[last].depart_ns > busy)
			busy = t->q[last].depart_ns;
	}
	if (t->left < DL_TRACE_OPP_BYTES)
		t->wasted_bytes += t->left; /* the rest of a part-used opportunity of the old trace */
	free(t->ms);
	t->ms = copy;
	t->n = n;
	t->period_ns = (uint64_t)ms[n - 1] * NS_PER_MS;
	t->offset_ns = offset_ms * NS_PER_MS % t->period_ns;
	t->start_ns = now_ns;
	t->left = DL_TRACE_OPP_BYTES;
	t->next = first_after(t, trace_time(t, busy));
	t->switches++;
	return 0;
}

/* The departure time of a packet of len bytes arriving at arrival_ns into *out:
 * 0, -1 when the stage's FIFO is full, -2 when the drop-tail limits refuse it. */
static int trace_depart(struct dl_trace *t, uint32_t len, uint64_t arrival_ns, uint64_t *out)
{
	/* packets delivered by now have left the queue */
	while (t->qcount && t->q[t->qhead].depart_ns <= arrival_ns) {
		t->qbytes -= t->q[t->qhead].len;
		t->qhead = t->qhead + 1 == t->qcap ? 0 : t->qhead + 1;
		t->qcount--;
	}
	/* the head is in transit once its first byte went: not counted as queued */
	int transit = t->qcount && t->q[t->qhead].start_ns <= arrival_ns;
	uint64_t qpk = t->qcount - (uint64_t)transit;
	uint64_t qb = t->qbytes - (transit ? t->q[t->qhead].len : 0);
	if ((t->limit_bytes && qb + len > t->limit_bytes) || (t->limit_packets && qpk + 1 > t->limit_packets)) {
		/* a full queue: nothing is pending unsettled since the last push, so
		 * opp_wasted is up to date here */
		if (!t->drops)
			t->wasted_at_first_drop = t->opp_wasted;
		t->wasted_at_last_drop = t->opp_wasted;
		t->drops++;
		t->drop_bytes += len;
		return -2;
	}
	if (t->qcount == t->qcap)
		return -1;
	dl_trace_settle(t, arrival_ns);
	uint64_t start = dl_trace_opp_ns(t, t->next);
	if (t->left == DL_TRACE_OPP_BYTES)
		t->opp_used++;
	uint32_t rest = len;
	if (rest > t->left) {
		/* fills this opportunity, then whole ones, then part of one */
		rest -= t->left;
		uint64_t more = (rest + DL_TRACE_OPP_BYTES - 1) / DL_TRACE_OPP_BYTES;
		t->next += more;
		t->opp_used += more;
		t->left = DL_TRACE_OPP_BYTES - (uint32_t)(rest - (more - 1) * DL_TRACE_OPP_BYTES);
	} else {
		t->left -= rest;
	}
	uint64_t depart = dl_trace_opp_ns(t, t->next);
	if (t->left == 0) {
		t->next++;
		t->left = DL_TRACE_OPP_BYTES;
	}
	uint32_t tail = t->qhead + t->qcount;
	if (tail >= t->qcap)
		tail -= t->qcap;
	t->q[tail] = (struct dl_trace_pkt){.start_ns = start, .depart_ns = depart, .len = len};
	t->qcount++;
	t->qbytes += len;
	t->bytes += len;
	*out = depart;
	return 0;
}

int dl_sched_push(struct dl_sched *s, uint32_t id, uint32_t len, uint64_t arrival_ns)
{
	if (s->count == s->cap)
		return -1;
	uint64_t sent = arrival_ns;
	if (s->trace) {
		int r = trace_depart(s->trace, len, arrival_ns, &sent);
		if (r < 0)
			return r;
	} else if (s->rate_bps) {
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
