/* Block header encoding, record file headers and stream reassembly (see latrec.h). */
#include "latrec.h"

#include <math.h>
#include <string.h>

void lat_put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

void lat_put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t lat_get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t lat_get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

void lat_hdr_encode(const struct lat_hdr *h, unsigned char out[LAT_HDR_LEN])
{
	lat_put_u32(out, h->magic);
	lat_put_u32(out + 4, h->block_len);
	lat_put_u64(out + 8, h->seq);
	lat_put_u64(out + 16, (uint64_t)h->t_sched_ns);
	lat_put_u64(out + 24, (uint64_t)h->t_write_ns);
}

int lat_hdr_decode(const unsigned char in[LAT_HDR_LEN], struct lat_hdr *h)
{
	h->magic = lat_get_u32(in);
	h->block_len = lat_get_u32(in + 4);
	h->seq = lat_get_u64(in + 8);
	h->t_sched_ns = (int64_t)lat_get_u64(in + 16);
	h->t_write_ns = (int64_t)lat_get_u64(in + 24);
	if (h->magic != LAT_MAGIC || h->block_len < LAT_MIN_BLOCK || h->block_len > LAT_MAX_BLOCK)
		return -1;
	return 0;
}

void lat_file_hdr(unsigned char out[LAT_FILE_HDR_LEN], const char magic[8], uint32_t rec_len)
{
	memcpy(out, magic, 8);
	lat_put_u32(out + 8, rec_len);
	lat_put_u32(out + 12, 0);
}

void lat_reasm_init(struct lat_reasm *r)
{
	memset(r, 0, sizeof(*r));
}

int lat_reasm_feed(struct lat_reasm *r, const unsigned char *buf, size_t len, lat_block_fn fn, void *ctx)
{
	size_t i = 0;
	if (r->error)
		return -1;
	while (i < len) {
		if (r->hdr_have < LAT_HDR_LEN) {
			size_t take = LAT_HDR_LEN - r->hdr_have;
			if (take > len - i)
				take = len - i;
			memcpy(r->hdr + r->hdr_have, buf + i, take);
			r->hdr_have += take;
			i += take;
			if (r->hdr_have < LAT_HDR_LEN)
				break;
			if (lat_hdr_decode(r->hdr, &r->cur) != 0) {
				r->error = LAT_E_MAGIC;
				return -1;
			}
			/* TCP and MPTCP deliver in order: a gap means the stream is not ours */
			if (r->cur.seq != r->next_seq) {
				r->error = LAT_E_SEQ;
				return -1;
			}
			r->payload_left = r->cur.block_len - LAT_HDR_LEN;
		}
		uint64_t skip = r->payload_left;
		if (skip > len - i)
			skip = len - i;
		r->payload_left -= skip;
		i += (size_t)skip;
		if (r->payload_left == 0) {
			r->blocks++;
			r->next_seq++;
			r->hdr_have = 0;
			fn(&r->cur, ctx);
		}
	}
	return 0;
}

int lat_reasm_at_boundary(const struct lat_reasm *r)
{
	return r->hdr_have == 0 && r->payload_left == 0;
}

int64_t lat_sched_ns(int64_t t0_ns, uint64_t k, double blocks_per_s)
{
	/* computed from k each time (not accumulated) so rounding never drifts */
	return t0_ns + (int64_t)llround((double)k * 1e9 / blocks_per_s);
}
