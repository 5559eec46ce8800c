/*
 * Wire header of a block and the per-block record files of mptcplab-latency.
 *
 * Everything is little-endian (the sender and the receiver run on the same
 * host; the Python reader, mptcplab/tools/latency.py, declares '<' dtypes, so
 * a big-endian host would be detected by the magic, not silently misread).
 * Kept in its own header so the C unit test checks the same encoding the
 * tool uses.
 */
#ifndef MPTCPLAB_LATREC_H
#define MPTCPLAB_LATREC_H

#include <stddef.h>
#include <stdint.h>

/* The first LAT_HDR_LEN bytes of every block on the wire. */
#define LAT_MAGIC 0x544c504dU /* "MPLT" read as a little-endian u32 */
#define LAT_HDR_LEN 32
#define LAT_MIN_BLOCK LAT_HDR_LEN
#define LAT_MAX_BLOCK (64U * 1024U * 1024U)

struct lat_hdr {
	uint32_t magic;
	uint32_t block_len; /* bytes of the whole block, header included */
	uint64_t seq;       /* 0, 1, 2, ... */
	int64_t t_sched_ns; /* CLOCK_REALTIME: when the schedule wanted the block written (= t_write in bulk mode) */
	int64_t t_write_ns; /* CLOCK_REALTIME: just before the first send() of the block */
};

void lat_hdr_encode(const struct lat_hdr *h, unsigned char out[LAT_HDR_LEN]);
/* 0 on success, -1 when the magic or the length is wrong. */
int lat_hdr_decode(const unsigned char in[LAT_HDR_LEN], struct lat_hdr *h);

/*
 * Record files: a 16-byte file header (8-byte magic, u32 record size, u32
 * reserved = 0) and fixed-size little-endian records, one per block.
 *   receiver  "MPLTRCV1", 32 bytes: u64 seq, i64 t_sched_ns, i64 t_write_ns, i64 t_recv_ns
 *   sender    "MPLTSND1", 40 bytes: u64 seq, i64 t_sched_ns, i64 t_write_ns, i64 t_done_ns, i64 blocked_ns
 * t_recv_ns: when the read that completed the block returned; t_done_ns: when
 * the last send() of the block returned; blocked_ns: time spent waiting in
 * poll() for send-buffer space while writing this block.
 */
#define LAT_FILE_HDR_LEN 16
#define LAT_RCV_MAGIC "MPLTRCV1"
#define LAT_SND_MAGIC "MPLTSND1"
#define LAT_RCV_REC_LEN 32
#define LAT_SND_REC_LEN 40

void lat_put_u32(unsigned char *p, uint32_t v);
void lat_put_u64(unsigned char *p, uint64_t v);
uint32_t lat_get_u32(const unsigned char *p);
uint64_t lat_get_u64(const unsigned char *p);

void lat_file_hdr(unsigned char out[LAT_FILE_HDR_LEN], const char magic[8], uint32_t rec_len);

/*
 * Receiver-side reassembly: feed it whatever recv() returned; it calls
 * on_block for each block completed within that chunk. Blocks of any size
 * (LAT_MIN_BLOCK..LAT_MAX_BLOCK) are handled without copying the payload.
 */
struct lat_reasm {
	unsigned char hdr[LAT_HDR_LEN];
	size_t hdr_have;      /* header bytes collected for the current block */
	uint64_t payload_left; /* payload bytes still to skip after the header */
	struct lat_hdr cur;
	uint64_t next_seq;
	uint64_t blocks;
	int error; /* 0, or LAT_E_* */
};
#define LAT_E_MAGIC 1
#define LAT_E_SEQ 2

typedef void (*lat_block_fn)(const struct lat_hdr *h, void *ctx);

void lat_reasm_init(struct lat_reasm *r);
/* Returns 0, or -1 after setting r->error (the stream cannot be trusted after that). */
int lat_reasm_feed(struct lat_reasm *r, const unsigned char *buf, size_t len, lat_block_fn fn, void *ctx);
/* Whether the stream stopped between two blocks. */
int lat_reasm_at_boundary(const struct lat_reasm *r);

/* Rate pacing: when block k is due, from the start time and the rate. */
int64_t lat_sched_ns(int64_t t0_ns, uint64_t k, double blocks_per_s);

#endif
