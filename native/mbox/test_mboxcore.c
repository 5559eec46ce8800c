/* Unit test of mboxcore.c: ISN offset on seq / ack / SACK edges, the payload flip's
 * schedule, splitting and merging segments (options copied / the first's kept), and
 * checksums that a receiver (sum over pseudo header + segment, IPv4 header) accepts. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "mboxcore.h"

static size_t mk(uint8_t *p, uint32_t src, uint32_t dst, uint16_t sp, uint16_t dp, uint32_t seq, uint32_t ack,
		 uint8_t flags, int sack, size_t payload)
{
	memset(p, 0, 1600);
	size_t doff = sack ? 32 : 20, tot = 20 + doff + payload;
	p[0] = 0x45, p[2] = tot >> 8, p[3] = tot & 0xff, p[8] = 64, p[9] = 6;
	memcpy(p + 12, &src, 4), memcpy(p + 16, &dst, 4);
	uint8_t *t = p + 20;
	t[0] = sp >> 8, t[1] = sp & 0xff, t[2] = dp >> 8, t[3] = dp & 0xff;
	for (int i = 0; i < 4; i++)
		t[4 + i] = seq >> (24 - 8 * i), t[8 + i] = ack >> (24 - 8 * i);
	t[12] = (uint8_t)(doff / 4) << 4, t[13] = flags;
	if (sack) { /* NOP NOP SACK(10): one block 1000..2000 */
		uint8_t o[12] = {1, 1, 5, 10, 0, 0, 0x03, 0xe8, 0, 0, 0x07, 0xd0};
		memcpy(t + 20, o, 12);
	}
	for (size_t i = 0; i < payload; i++)
		t[doff + i] = (uint8_t)i;
	uint16_t cs = mb_tcp_checksum(p, tot);
	t[16] = cs >> 8, t[17] = cs & 0xff;
	return tot;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

/* a receiver's check, written independently of mb_tcp_checksum: the sum is 0xffff */
static int csum_ok(const uint8_t *p, size_t tot)
{
	uint32_t acc = 6 + (uint32_t)(tot - 20);
	for (int i = 12; i < 20; i += 2)
		acc += (uint32_t)(p[i] << 8 | p[i + 1]);
	for (size_t i = 20; i < tot; i += 2)
		acc += (uint32_t)(p[i] << 8 | (i + 1 < tot ? p[i + 1] : 0));
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return acc == 0xffff;
}

static int ip_ok(const uint8_t *p)
{
	uint32_t acc = 0;
	for (int i = 0; i < 20; i += 2)
		acc += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return acc == 0xffff;
}

int main(void)
{
	static struct mb_state s;
	static uint8_t p[1600];
	uint32_t c = 0x0100000a, v = 0x0200000a;
	s.cfg.mode = MB_ISN_OFFSET, s.cfg.offset = 0x10000000;
	size_t n = mk(p, c, v, 40000, 5201, 0xf0000000, 0, 0x02, 0, 0); /* SYN: seq wraps */
	assert(mb_process(&s, p, n) == 1 && be32(p + 24) == 0x00000000 && csum_ok(p, n));
	n = mk(p, v, c, 5201, 40000, 77, 0xf0000001, 0x12, 1, 0); /* SYN/ACK with a SACK block */
	assert(mb_process(&s, p, n) == 1 && be32(p + 28) == 0xe0000001 && csum_ok(p, n));
	assert(be32(p + 20 + 24) == 1000 - 0x10000000u && be32(p + 20 + 28) == 2000 - 0x10000000u);
	assert(be32(p + 24) == 77); /* the server's own seq is untouched */
	n = mk(p, c, 0x0300000a, 40001, 5201, 5, 0, 0x10, 0, 0); /* no SYN seen: passes */
	assert(mb_process(&s, p, n) == 0 && s.st.untracked == 1);
	assert(s.st.seq_rewritten == 1 && s.st.ack_rewritten == 1 && s.st.sack_blocks_rewritten == 1);

	static struct mb_state f;
	f.cfg.mode = MB_PAYLOAD_FLIP, f.cfg.after = 3, f.cfg.every = 2, f.cfg.byte_offset = 100;
	int flipped[10];
	for (int i = 0; i < 10; i++) {
		n = mk(p, c, v, 40000, 5201, 1 + 50 * (uint32_t)i, 1, 0x18, 0, 50);
		flipped[i] = mb_process(&f, p, n);
		assert(csum_ok(p, n));
		if (flipped[i])
			assert(p[40 + 49] == (uint8_t)~49); /* shorter than the offset: the last byte */
	}
	/* segments 1..3 untouched, then every 2nd: 5, 7, 9 (indexes 4, 6, 8) */
	int want[10] = {0, 0, 0, 0, 1, 0, 1, 0, 1, 0};
	assert(!memcmp(flipped, want, sizeof(want)) && f.st.flipped == 3 && f.st.data_segments == 10);
	n = mk(p, c, v, 40000, 5201, 1, 1, 0x10, 0, 0); /* a pure ACK is no data segment */
	assert(mb_process(&f, p, n) == 0 && f.st.data_segments == 10);

	/* --count 1: the first picked segment of each subflow only (the selftests' one corrupted packet) */
	static struct mb_state one;
	one.cfg.mode = MB_PAYLOAD_FLIP, one.cfg.after = 1, one.cfg.every = 1, one.cfg.count = 1;
	for (int i = 0; i < 5; i++) {
		n = mk(p, c, v, 40002, 5201, 1 + 50 * (uint32_t)i, 1, 0x18, 0, 50);
		assert(mb_process(&one, p, n) == (i == 1) && csum_ok(p, n));
	}
	n = mk(p, c, v, 40003, 5201, 1, 1, 0x18, 0, 50); /* another subflow: its own count */
	assert(mb_process(&one, p, n) == 0);
	n = mk(p, c, v, 40003, 5201, 51, 1, 0x18, 0, 50);
	assert(mb_process(&one, p, n) == 1 && one.st.flipped == 2);

	/* split: two pieces, the options (here a SACK block standing for the DSS) in both */
	static struct mb_state sp;
	static uint8_t q[1600];
	sp.cfg.mode = MB_SPLIT, sp.cfg.after = 1, sp.cfg.every = 1;
	n = mk(p, c, v, 40000, 5201, 1000, 1, 0x18, 1, 1);
	assert(!mb_pick(&sp, p, n)); /* the first data segment is left alone */
	n = mk(p, c, v, 40000, 5201, 1001, 1, 0x18 | 0x80, 1, 101); /* ACK PSH CWR, 101 bytes */
	p[4] = 0x12, p[5] = 0x34, p[10] = p[11] = 0;
	assert(mb_pick(&sp, p, n) && sp.st.picked == 1);
	size_t first, n2 = mb_split(p, n, &first, q);
	assert(first == 20 + 32 + 50 && n2 == 20 + 32 + 51);
	assert(csum_ok(p, first) && csum_ok(q, n2) && ip_ok(p) && ip_ok(q));
	assert(be32(p + 24) == 1001 && be32(q + 24) == 1051);
	assert(p[33] == 0x90 && q[33] == 0x18); /* PSH on the last piece, CWR on the first */
	assert(!memcmp(p + 40, q + 40, 12) && q[52] == 50 && p[51 + 1] == 0); /* options; payload */
	assert(q[4] == 0x12 && q[5] == 0x35);
	n = mk(p, c, v, 40000, 5201, 1, 1, 0x10, 0, 1);
	assert(mb_split(p, n, &first, q) == 0 && first == n); /* one byte: not split */

	/* merge: the next segment of the same direction continuing the first */
	size_t n1 = mk(p, c, v, 40000, 5201, 5000, 1, 0x10, 1, 100);
	n2 = mk(q, c, v, 40000, 5201, 5100, 9, 0x18, 0, 60);
	assert(mb_can_append(p, n1, q, n2, 1500) && !mb_can_append(p, n1, q, n2, n1 + 59));
	assert(!mb_can_append(q, n2, p, n1, 1500)); /* not in sequence */
	size_t m = mb_append(p, n1, q, n2);
	assert(m == n1 + 60 && csum_ok(p, m) && ip_ok(p) && (p[20 + 13] & 0x08) && p[20 + 12] >> 4 == 8);
	assert(p[20 + 32 + 100] == 0 && p[20 + 32 + 159] == 59 && be32(p + 28) == 1); /* first's ack kept */
	n2 = mk(q, v, c, 5201, 40000, 5100, 1, 0x10, 0, 60);
	assert(!mb_can_append(p, m, q, n2, 3000)); /* the other direction */
	printf("test_mboxcore: ok\n");
	return 0;
}
