/* The packet rewriting of mptcplab-mbox, pure (a buffer in, a buffer out), so the
 * C unit test (test_mboxcore.c) runs without root or netlink. */
#ifndef MBOXCORE_H
#define MBOXCORE_H
#include <stddef.h>
#include <stdint.h>

enum mb_mode { MB_ISN_OFFSET, MB_PAYLOAD_FLIP, MB_SPLIT, MB_MERGE };

#define MB_TABLE_SIZE 4096 /* connections tracked; beyond: counted in table_full */

struct mb_conn {
	uint32_t caddr, saddr; /* client (sent the SYN) and server, network order */
	uint16_t cport, sport;
	uint8_t used;
	uint64_t data_segs; /* segments with payload seen on this subflow */
	uint64_t flips;     /* payload-flip: segments of this subflow modified */
};

struct mb_cfg {
	enum mb_mode mode;
	uint32_t offset;      /* isn-offset: added to the client's sequence numbers */
	uint32_t after;       /* payload-flip: leave the first K data segments alone */
	uint32_t every;       /* payload-flip: then flip every Mth */
	uint32_t byte_offset; /* payload-flip: which payload byte (the last when shorter) */
	uint32_t count;       /* payload-flip: at most this many per subflow (0: no limit) */
	uint32_t max_len;     /* merge: the longest IPv4 packet a merge may make */
};

struct mb_stats {
	uint64_t packets, not_ipv4_tcp, malformed, syns, untracked, table_full;
	uint64_t seq_rewritten, ack_rewritten, sack_blocks_rewritten, data_segments, flipped;
	uint64_t picked, split, merged, merge_released; /* split / merge: what mbox.c did with the picked */
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

/* split / merge: 1 when pkt is a data segment the --after/--every schedule picks (per
 * connection, like payload-flip), else 0; counts data_segments and picked. */
int mb_pick(struct mb_state *s, const uint8_t *pkt, size_t len);
/* split: pkt keeps the first half of its payload (FIN and PSH cleared: they belong to the
 * last piece), second[] gets the rest with seq advanced and CWR cleared; both carry every
 * TCP option of the original, as a TSO NIC copies them (NSDI 2012 MB13). Lengths and IPv4
 * and TCP checksums fixed. Returns the second packet's length (0: payload < 2 bytes, not
 * split); *first_len is pkt's new length. second needs len bytes. */
size_t mb_split(uint8_t *pkt, size_t len, size_t *first_len, uint8_t *second);
/* merge: 1 when next continues first (same 4-tuple and direction, next seq = first's seq +
 * payload, neither SYN, FIN nor RST, payload in both) and the sum fits max_len. */
int mb_can_append(const uint8_t *first, size_t flen, const uint8_t *next, size_t nlen, size_t max_len);
/* merge: next's payload appended to first (first's header and options kept, its DSS
 * mapping among them; PSH of either), lengths and checksums fixed; first must have room
 * for max_len bytes. Returns first's new length. */
size_t mb_append(uint8_t *first, size_t flen, const uint8_t *next, size_t nlen);

#endif
