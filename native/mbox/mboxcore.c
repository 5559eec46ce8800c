#include "mboxcore.h"

#include <string.h>

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void wr32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static void wr16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v & 0xff; }

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t acc)
{
	for (; n > 1; n -= 2, p += 2)
		acc += rd16(p);
	if (n)
		acc += (uint32_t)p[0] << 8;
	return acc;
}

uint16_t mb_tcp_checksum(const uint8_t *pkt, size_t len)
{
	size_t ihl = (size_t)(pkt[0] & 0x0f) * 4, tcplen = rd16(pkt + 2) - ihl;
	if (ihl + tcplen > len)
		tcplen = len - ihl;
	uint32_t acc = sum16(pkt + 12, 8, 0) + 6 + (uint32_t)tcplen; /* pseudo header */
	acc = sum16(pkt + ihl, 16, acc);          /* header up to the checksum */
	acc = sum16(pkt + ihl + 18, tcplen - 18, acc); /* the rest */
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)~acc;
}

static uint16_t ip_checksum(const uint8_t *pkt)
{
	size_t ihl = (size_t)(pkt[0] & 0x0f) * 4;
	uint32_t acc = sum16(pkt, 10, 0) + sum16(pkt + 12, ihl - 12, 0);
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)~acc;
}

static void fix_checksums(uint8_t *pkt, size_t tot)
{
	wr16(pkt + 10, ip_checksum(pkt));
	wr16(pkt + (size_t)(pkt[0] & 0x0f) * 4 + 16, mb_tcp_checksum(pkt, tot));
}

static uint32_t hash(uint32_t a, uint16_t ap, uint32_t b, uint16_t bp)
{
	/* symmetric in the two ends: both directions find the same slot chain */
	uint32_t h = (a ^ b) * 2654435761u ^ (uint32_t)(ap ^ bp) * 40503u;
	return h % MB_TABLE_SIZE;
}

/* The connection of this 4-tuple; *from_client says the packet's direction. With
 * create, a SYN without ACK makes its sender the client. */
static struct mb_conn *lookup(struct mb_state *s, uint32_t src, uint16_t sp, uint32_t dst, uint16_t dp,
			      int create, int *from_client)
{
	uint32_t h = hash(src, sp, dst, dp);
	for (uint32_t i = 0; i < MB_TABLE_SIZE; i++) {
		struct mb_conn *c = &s->table[(h + i) % MB_TABLE_SIZE];
		if (!c->used) {
			if (!create)
				return NULL;
			c->used = 1;
			c->caddr = src, c->cport = sp, c->saddr = dst, c->sport = dp, c->data_segs = 0;
			*from_client = 1;
			return c;
		}
		if (c->caddr == src && c->cport == sp && c->saddr == dst && c->sport == dp) {
			*from_client = 1;
			return c;
		}
		if (c->caddr == dst && c->cport == dp && c->saddr == src && c->sport == sp) {
			*from_client = 0;
			return c;
		}
	}
	if (create)
		s->st.table_full++;
	return NULL;
}

/* ack and every SACK edge of a segment from the server: minus the offset */
static int shift_acks(struct mb_state *s, uint8_t *tcp, size_t doff)
{
	int changed = 0;
	if (tcp[13] & 0x10) {
		wr32(tcp + 8, rd32(tcp + 8) - s->cfg.offset);
		s->st.ack_rewritten++;
		changed = 1;
	}
	for (size_t i = 20; i < doff;) {
		uint8_t kind = tcp[i];
		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 1 >= doff || tcp[i + 1] < 2 || i + tcp[i + 1] > doff) {
			s->st.malformed++;
			break;
		}
		uint8_t olen = tcp[i + 1];
		if (kind == 5) {
			for (size_t e = i + 2; e + 4 <= i + olen; e += 4) {
				wr32(tcp + e, rd32(tcp + e) - s->cfg.offset);
				changed = 1;
			}
			s->st.sack_blocks_rewritten += (olen - 2) / 8;
		}
		i += olen;
	}
	return changed;
}

/* An IPv4 TCP segment's header and payload lengths; 0 when pkt is none (or a fragment). */
static int parse(const uint8_t *pkt, size_t len, size_t *ihl, size_t *doff, size_t *plen)
{
	if (len < 40 || (pkt[0] >> 4) != 4 || pkt[9] != 6)
		return 0;
	size_t tot = rd16(pkt + 2);
	*ihl = (size_t)(pkt[0] & 0x0f) * 4;
	if (*ihl < 20 || tot > len || tot < *ihl + 20 || (rd16(pkt + 6) & 0x3fff))
		return 0;
	*doff = (size_t)(pkt[*ihl + 12] >> 4) * 4;
	if (*doff < 20 || *ihl + *doff > tot)
		return 0;
	*plen = tot - *ihl - *doff;
	return 1;
}

int mb_pick(struct mb_state *s, const uint8_t *pkt, size_t len)
{
	s->st.packets++;
	size_t ihl, doff, plen;
	if (!parse(pkt, len, &ihl, &doff, &plen)) {
		s->st.not_ipv4_tcp++;
		return 0;
	}
	const uint8_t *tcp = pkt + ihl;
	if (plen == 0 || (tcp[13] & 0x07)) /* SYN, FIN, RST: never split or merged */
		return 0;
	uint32_t src, dst;
	memcpy(&src, pkt + 12, 4);
	memcpy(&dst, pkt + 16, 4);
	int from_client = 0;
	struct mb_conn *c = lookup(s, src, rd16(tcp), dst, rd16(tcp + 2), 1, &from_client);
	if (!c) {
		s->st.untracked++;
		return 0;
	}
	uint64_t n = ++c->data_segs;
	s->st.data_segments++;
	if (n > s->cfg.after && (n - s->cfg.after) % s->cfg.every == 0) {
		s->st.picked++;
		return 1;
	}
	return 0;
}

size_t mb_split(uint8_t *pkt, size_t len, size_t *first_len, uint8_t *second)
{
	size_t ihl, doff, plen;
	*first_len = len;
	if (!parse(pkt, len, &ihl, &doff, &plen) || plen < 2)
		return 0;
	size_t h = plen / 2, hdr = ihl + doff, tot2 = hdr + plen - h;
	memcpy(second, pkt, hdr);
	memcpy(second + hdr, pkt + hdr + h, plen - h);
	wr16(second + 2, (uint16_t)tot2);
	wr16(second + 4, (uint16_t)(rd16(pkt + 4) + 1)); /* the next IP ID, as TSO numbers them */
	wr32(second + ihl + 4, rd32(pkt + ihl + 4) + (uint32_t)h);
	second[ihl + 13] &= (uint8_t)~0x80; /* CWR: the first piece only */
	pkt[ihl + 13] &= (uint8_t)~0x09;    /* FIN, PSH: the last piece only */
	*first_len = hdr + h;
	wr16(pkt + 2, (uint16_t)*first_len);
	fix_checksums(pkt, *first_len);
	fix_checksums(second, tot2);
	return tot2;
}

int mb_can_append(const uint8_t *first, size_t flen, const uint8_t *next, size_t nlen, size_t max_len)
{
	size_t i1, d1, p1, i2, d2, p2;
	if (!parse(first, flen, &i1, &d1, &p1) || !parse(next, nlen, &i2, &d2, &p2) || !p1 || !p2)
		return 0;
	const uint8_t *t1 = first + i1, *t2 = next + i2;
	if ((t1[13] | t2[13]) & 0x07 || memcmp(first + 12, next + 12, 8) || memcmp(t1, t2, 4))
		return 0;
	return rd32(t2 + 4) == rd32(t1 + 4) + (uint32_t)p1 && i1 + d1 + p1 + p2 <= max_len;
}

size_t mb_append(uint8_t *first, size_t flen, const uint8_t *next, size_t nlen)
{
	size_t i1, d1, p1, i2, d2, p2;
	if (!parse(first, flen, &i1, &d1, &p1) || !parse(next, nlen, &i2, &d2, &p2))
		return flen;
	memcpy(first + i1 + d1 + p1, next + i2 + d2, p2);
	first[i1 + 13] |= next[i2 + 13] & 0x08; /* PSH */
	size_t tot = i1 + d1 + p1 + p2;
	wr16(first + 2, (uint16_t)tot);
	fix_checksums(first, tot);
	return tot;
}

int mb_process(struct mb_state *s, uint8_t *pkt, size_t len)
{
	s->st.packets++;
	if (len < 20 || (pkt[0] >> 4) != 4 || pkt[9] != 6) {
		s->st.not_ipv4_tcp++;
		return 0;
	}
	size_t ihl = (size_t)(pkt[0] & 0x0f) * 4, tot = rd16(pkt + 2);
	if (ihl < 20 || tot > len || tot < ihl + 20 || (rd16(pkt + 6) & 0x3fff)) { /* fragments: not ours */
		s->st.malformed++;
		return 0;
	}
	uint8_t *tcp = pkt + ihl;
	size_t doff = (size_t)(tcp[12] >> 4) * 4;
	if (doff < 20 || ihl + doff > tot) {
		s->st.malformed++;
		return 0;
	}
	size_t plen = tot - ihl - doff;
	uint32_t src, dst;
	memcpy(&src, pkt + 12, 4);
	memcpy(&dst, pkt + 16, 4);
	uint16_t sp = rd16(tcp), dp = rd16(tcp + 2);
	int syn_only = (tcp[13] & 0x12) == 0x02, from_client = 0;
	if (syn_only)
		s->st.syns++;
	struct mb_conn *c = lookup(s, src, sp, dst, dp, syn_only || s->cfg.mode == MB_PAYLOAD_FLIP, &from_client);
	if (!c) {
		s->st.untracked++;
		return 0;
	}
	int changed = 0;
	if (s->cfg.mode == MB_ISN_OFFSET) {
		if (from_client) {
			wr32(tcp + 4, rd32(tcp + 4) + s->cfg.offset);
			s->st.seq_rewritten++;
			changed = 1;
		} else {
			changed = shift_acks(s, tcp, doff);
		}
	} else if (plen > 0) {
		uint64_t n = ++c->data_segs;
		s->st.data_segments++;
		if (n > s->cfg.after && (n - s->cfg.after) % s->cfg.every == 0 &&
		    (!s->cfg.count || c->flips < s->cfg.count)) {
			c->flips++;
			size_t at = s->cfg.byte_offset < plen ? s->cfg.byte_offset : plen - 1;
			tcp[doff + at] ^= 0xff;
			s->st.flipped++;
			changed = 1;
		}
	}
	if (changed)
		wr16(tcp + 16, mb_tcp_checksum(pkt, tot));
	return changed;
}
