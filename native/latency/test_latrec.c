/* C unit test of latrec.c: header round trip, reassembly across arbitrary
 * read boundaries, bad streams, and the pacing schedule. No root, no network. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latrec.h"

static int failures;
#define CHECK(cond) do { if (!(cond)) { failures++; fprintf(stderr, "%s:%d: FAIL %s\n", __FILE__, __LINE__, #cond); } } while (0)

struct got {
	uint64_t seqs[64];
	int64_t writes[64];
	int n;
};

static void collect(const struct lat_hdr *h, void *p)
{
	struct got *g = p;
	if (g->n < 64) {
		g->seqs[g->n] = h->seq;
		g->writes[g->n] = h->t_write_ns;
	}
	g->n++;
}

/* n blocks of size bs into one stream */
static unsigned char *stream(int n, uint32_t bs, size_t *len)
{
	unsigned char *s = calloc((size_t)n, bs);
	for (int k = 0; k < n; k++) {
		struct lat_hdr h = {LAT_MAGIC, bs, (uint64_t)k, 1000 + k, -5 - k};
		lat_hdr_encode(&h, s + (size_t)k * bs);
		memset(s + (size_t)k * bs + LAT_HDR_LEN, 0xa5, bs - LAT_HDR_LEN); /* payload that looks like nothing */
	}
	*len = (size_t)n * bs;
	return s;
}

static void test_roundtrip(void)
{
	unsigned char b[LAT_HDR_LEN];
	struct lat_hdr h = {LAT_MAGIC, 8192, 0x0102030405060708ULL, -1, 1763860000123456789LL}, d;
	lat_hdr_encode(&h, b);
	CHECK(b[0] == 'M' && b[1] == 'P' && b[2] == 'L' && b[3] == 'T');
	CHECK(lat_hdr_decode(b, &d) == 0);
	CHECK(d.seq == h.seq && d.t_sched_ns == -1 && d.t_write_ns == h.t_write_ns && d.block_len == 8192);
	h.block_len = 31;
	lat_hdr_encode(&h, b);
	CHECK(lat_hdr_decode(b, &d) == -1);
	h.block_len = LAT_MAX_BLOCK + 1;
	lat_hdr_encode(&h, b);
	CHECK(lat_hdr_decode(b, &d) == -1);
}

static void test_chunks(uint32_t bs, size_t chunk)
{
	size_t len;
	unsigned char *s = stream(20, bs, &len);
	struct lat_reasm r;
	struct got g = {0};
	lat_reasm_init(&r);
	for (size_t i = 0; i < len; i += chunk) {
		size_t n = len - i < chunk ? len - i : chunk;
		CHECK(lat_reasm_feed(&r, s + i, n, collect, &g) == 0);
	}
	CHECK(g.n == 20 && r.blocks == 20);
	for (int k = 0; k < 20 && k < g.n; k++)
		CHECK(g.seqs[k] == (uint64_t)k && g.writes[k] == -5 - k);
	CHECK(lat_reasm_at_boundary(&r));
	free(s);
}

static void test_partial_and_bad(void)
{
	size_t len;
	unsigned char *s = stream(3, 100, &len);
	struct lat_reasm r;
	struct got g = {0};
	lat_reasm_init(&r);
	CHECK(lat_reasm_feed(&r, s, 150, collect, &g) == 0);
	CHECK(g.n == 1 && !lat_reasm_at_boundary(&r));
	/* a block missing: seq 2 arrives where 1 is expected */
	CHECK(lat_reasm_feed(&r, s + 250, 50, collect, &g) == 0 || r.error == LAT_E_SEQ);
	lat_reasm_init(&r);
	g.n = 0;
	CHECK(lat_reasm_feed(&r, s + 100, 100, collect, &g) == -1 && r.error == LAT_E_SEQ);
	CHECK(lat_reasm_feed(&r, s, 100, collect, &g) == -1); /* stays failed */
	lat_reasm_init(&r);
	s[0] ^= 0xff;
	CHECK(lat_reasm_feed(&r, s, 100, collect, &g) == -1 && r.error == LAT_E_MAGIC);
	free(s);
}

static void test_sched(void)
{
	CHECK(lat_sched_ns(1000, 0, 1500.0) == 1000);
	CHECK(lat_sched_ns(0, 3, 3.0) == 1000000000LL);
	/* no drift after a million blocks at a rate that is not a whole number of ns */
	CHECK(lat_sched_ns(0, 1000000, 1526.0) == 655307994758LL);
}

int main(void)
{
	test_roundtrip();
	test_chunks(8192, 1);
	test_chunks(8192, 7);
	test_chunks(8192, 8192);
	test_chunks(8192, 100000);
	test_chunks(32, 5);
	test_chunks(33, 64);
	test_partial_and_bad();
	test_sched();
	printf("test_latrec: %d failures\n", failures);
	return failures != 0;
}
