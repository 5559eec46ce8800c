/* The packet rewriting of mptcplab-mbox, pure (a buffer in, a buffer out), so the
 * C unit test (test_mboxcore.c) runs without root or netlink. */
#ifndef MBOXCORE_H
#define MBOXCORE_H
#include <stddef.h>
#include <stdint.h>

enum mb_mode { MB_ISN_OFFSET, MB_PAYLOAD_FLIP };

#define MB_TABLE_SIZE 4096 /* connections tracked; beyond: counted in table_full */

struct mb_conn {
	uint32_t caddr, saddr; /* client (sent the SYN) and server, network order */
	uint16_t cport, sport;
	uint8_t used;
	uint64_t data_segs; /* segments with payload seen on this subflow */
};

struct mb_cfg {
	enum mb_mode mode;
	uint32_t offset;      /* isn-offset: added to the client's sequence numbers */
	uint32_t after;       /* payload-flip: leave the first K data segments alone */
	uint32_t every;       /* payload-flip: then flip every Mth */
	uint32_t byte_offset; /* payload-flip: which payload byte (the last when shorter) */
};

struct mb_stats {
	uint64_t packets, not_ipv4_tcp, malformed, syns, untracked, table_full;
	uint64_t seq_rewritten, ack_rewritten, sack_blocks_rewritten, data_segments, flipped;
};

struct mb_state {
	struct mb_cfg cfg;
	struct mb_stats st;
	struct mb_conn table[MB_TABLE_SIZE];
};

/* Rewrites the IPv4 packet pkt[0..len) in place per the mode; returns 1 when it
 * changed it (TCP checksum recomputed), 0 when it passes unchanged. */
int mb_process(struct mb_state *s, uint8_t *pkt, size_t len);
/* The TCP checksum of an IPv4 packet, computed from scratch. */
uint16_t mb_tcp_checksum(const uint8_t *pkt, size_t len);

#endif
