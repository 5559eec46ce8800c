/*
 * pcapread: one pass over a pcap/pcapng file into one fixed-size row per packet
 * (Ethernet / Linux cooked SLL and SLL2 / raw IP / BSD loopback, IPv4 / IPv6,
 * TCP with the MPTCP option, ICMP and ICMPv6 errors with their quoted header).
 *
 * The Python side (mptcplab/analysis/pcapread.py) loads this as a shared library
 * with ctypes and copies the columns into numpy arrays; the columns are not
 * listed twice: pcr_layout() names them with their numpy types, so a field
 * added to PCR_FIELDS shows up in Python by itself.
 */
#ifndef MPTCPLAB_PCAPREAD_H
#define MPTCPLAB_PCAPREAD_H

#include <stddef.h>
#include <stdint.h>

/* Bits of pcr_row.has: which optional fields the packet carried. */
enum {
    PCR_IP        = 1u << 0,   /* an IPv4/IPv6 header was decoded */
    PCR_TCP       = 1u << 1,   /* a TCP header (outer, or quoted by an ICMP error) */
    PCR_ICMP      = 1u << 2,   /* ICMP or ICMPv6: icmp_type/icmp_code are set */
    PCR_QUOTED    = 1u << 3,   /* the ICMP error quotes an IP header: q_* are set */
    PCR_ICMP_MTU  = 1u << 4,   /* frag needed (v4 type 3 code 4) / packet too big (v6 type 2) */
    PCR_SENDKEY   = 1u << 5,   /* MP_CAPABLE sender's key */
    PCR_RECVKEY   = 1u << 6,   /* MP_CAPABLE receiver's key, or MP_FASTCLOSE's key */
    PCR_RECVTOK   = 1u << 7,   /* MP_JOIN SYN: receiver's token */
    PCR_DACK      = 1u << 8,   /* DSS data ACK */
    PCR_DACK64    = 1u << 9,   /* ... sent as 8 octets (else 4) */
    PCR_DSN       = 1u << 10,  /* DSS mapping: dsn, ssn, dll */
    PCR_DSN64     = 1u << 11,  /* ... DSN sent as 8 octets (else 4) */
    PCR_CSUM      = 1u << 12,  /* DSS (or MP_CAPABLE with data) carried a checksum */
    PCR_DATAFIN   = 1u << 13,  /* DSS DATA_FIN flag */
    PCR_DLL       = 1u << 14,  /* dll set (DSS mapping or MP_CAPABLE with data) */
    PCR_FAILDSN   = 1u << 15,  /* MP_FAIL's DSN */
    PCR_ADDR_ID   = 1u << 16,  /* addr_id set (MP_JOIN SYN or SYN/ACK, ADD_ADDR, MP_PRIO v0) */
    PCR_BACKUP    = 1u << 17,  /* backup set (MP_JOIN SYN or SYN/ACK, MP_PRIO) */
    PCR_ADDPORT   = 1u << 18,  /* ADD_ADDR carried a port */
    PCR_ADDHMAC   = 1u << 19,  /* ADD_ADDR carried a truncated HMAC (v1, not an echo) */
    PCR_ADDECHO   = 1u << 20,  /* ADD_ADDR echo flag */
    PCR_MALFORMED = 1u << 21,  /* an option or header was cut short or inconsistent */
    PCR_TRUNC     = 1u << 22,  /* the frame was captured shorter than the headers (snaplen) */
    PCR_JOINHMAC  = 1u << 23,  /* MP_JOIN third ACK (the 20-byte HMAC) */
    PCR_MPC       = 1u << 24,  /* mpc_ver/mpc_flags set (MP_CAPABLE) */
    PCR_SEQ       = 1u << 25,  /* seq was captured (8 bytes of TCP header) */
    PCR_TCPHDR    = 1u << 26,  /* ack, flags (14 bytes) and win (16 bytes) were captured */
    PCR_TS        = 1u << 27,  /* TCP timestamps option (RFC 7323): tsval, tsecr */
    PCR_MSS       = 1u << 28,  /* TCP MSS option (RFC 9293, SYN and SYN/ACK): mss */
};

/*
 * The fields of one packet: X(C type, name, numpy type, meaning). The reader
 * decodes a packet into a pcr_row on the stack, then appends every field to its
 * own column array (structure of arrays), so Python copies contiguous columns:
 * pulling 45 fields out of an array of 150-byte rows cost 8x more.
 * Addresses are indices into the file's address table (pcr_addr): 0 is "none",
 * so the Python side formats each distinct address once.
 */
#define PCR_FIELDS(X) \
    X(int64_t,  t_ns,       "<i8") /* capture time, nanoseconds since the epoch */ \
    X(uint64_t, sendkey,    "<u8") /* MP_CAPABLE sender's key */ \
    X(uint64_t, recvkey,    "<u8") /* MP_CAPABLE receiver's key / MP_FASTCLOSE key */ \
    X(uint64_t, data_ack,   "<u8") /* DSS data ACK as sent (4 or 8 octets, PCR_DACK64) */ \
    X(uint64_t, dsn,        "<u8") /* DSS data sequence number as sent (PCR_DSN64) */ \
    X(uint64_t, fail_dsn,   "<u8") /* MP_FAIL data sequence number */ \
    X(uint64_t, rm_ids,     "<u8") /* REMOVE_ADDR: up to 8 ids, first in the low byte */ \
    X(uint32_t, has,        "<u4") /* PCR_* bits */ \
    X(uint32_t, frame,      "<u4") /* 1-based packet number in the file */ \
    X(uint32_t, seq,        "<u4") /* raw TCP sequence number */ \
    X(uint32_t, ack,        "<u4") /* raw TCP acknowledgment number */ \
    X(uint32_t, ssn,        "<u4") /* DSS subflow sequence number (relative) */ \
    X(uint32_t, tsval,      "<u4") /* TCP timestamps option: TSval (PCR_TS) */ \
    X(uint32_t, tsecr,      "<u4") /* ... TSecr */ \
    X(uint32_t, recvtok,    "<u4") /* MP_JOIN SYN: token of the receiver */ \
    X(uint32_t, icmp_mtu,   "<u4") /* next-hop MTU: frag needed / packet too big */ \
    X(uint32_t, src,        "<u4") /* address index, outer IP source */ \
    X(uint32_t, dst,        "<u4") /* ... outer IP destination */ \
    X(uint32_t, q_src,      "<u4") /* ... IP header quoted by an ICMP error */ \
    X(uint32_t, q_dst,      "<u4") \
    X(uint32_t, addaddr,    "<u4") /* ... ADD_ADDR address */ \
    X(uint32_t, wirelen,    "<u4") /* frame length on the wire */ \
    X(int32_t,  tlen,       "<i4") /* TCP payload length from the IP length, -1 unknown */ \
    X(uint16_t, ip_len,     "<u2") /* IPv4 total length; IPv6 payload length + 40 */ \
    X(uint16_t, q_len,      "<u2") /* ... of the quoted header */ \
    X(uint16_t, sport,      "<u2") \
    X(uint16_t, dport,      "<u2") \
    X(uint16_t, flags,      "<u2") /* TCP flags, 12 bits (tshark's tcp.flags) */ \
    X(uint16_t, win,        "<u2") /* raw TCP window */ \
    X(uint16_t, dll,        "<u2") /* data-level length */ \
    X(uint16_t, mp,         "<u2") /* bit n: MPTCP option subtype n present */ \
    X(uint16_t, add_port,   "<u2") /* ADD_ADDR port */ \
    X(uint16_t, mss,        "<u2") /* TCP MSS option's value (PCR_MSS) */ \
    X(uint8_t,  ipv,        "u1")  /* 4 or 6; 0 when no IP header was found */ \
    X(uint8_t,  q_ipv,      "u1") \
    X(uint8_t,  ttl,        "u1")  /* IPv4 TTL / IPv6 hop limit */ \
    X(uint8_t,  q_ttl,      "u1") \
    X(uint8_t,  proto,      "u1")  /* outer upper-layer protocol (6, 1, 58, ...) */ \
    X(uint8_t,  icmp_type,  "u1") \
    X(uint8_t,  icmp_code,  "u1") \
    X(uint8_t,  dss_flags,  "u1")  /* DSS flags: A=0x01 a=0x02 M=0x04 m=0x08 F=0x10 */ \
    X(uint8_t,  mpc_ver,    "u1")  /* MP_CAPABLE version */ \
    X(uint8_t,  mpc_flags,  "u1")  /* MP_CAPABLE flags (A=0x80 checksum required) */ \
    X(uint8_t,  addr_id,    "u1") \
    X(uint8_t,  backup,     "u1")  /* B flag of MP_JOIN / MP_PRIO */ \
    X(uint8_t,  rst_reason, "u1")  /* MP_TCPRST reason */ \
    X(uint8_t,  rst_flags,  "u1")  /* MP_TCPRST flags U V W T */ \
    X(uint8_t,  rm_n,       "u1")  /* REMOVE_ADDR: number of ids */

typedef struct {
#define PCR_X(type, name, np) type name;
    PCR_FIELDS(PCR_X)
#undef PCR_X
} pcr_row;

typedef struct pcr_file pcr_file;

/* Reads the whole file. Returns NULL with a message in err on failure to open;
 * otherwise a handle, even when the file ends mid-packet (pcr_warning says so). */
pcr_file *pcr_read(const char *path, char *err, size_t errlen);
size_t pcr_count(const pcr_file *f);
/* Column i (in pcr_layout order): pcr_count values of its numpy type. */
const void *pcr_column(const pcr_file *f, size_t i);
/* Address table: index i (1-based) -> family 4/6 and 4 or 16 bytes. */
size_t pcr_addr_count(const pcr_file *f);
int pcr_addr(const pcr_file *f, size_t i, uint8_t out[16]);
int pcr_linktype(const pcr_file *f);
/* "" or why reading stopped early (a capture cut short, a read error). */
const char *pcr_warning(const pcr_file *f);
void pcr_free(pcr_file *f);

/* "name:numpy-type;..." for every column, in order. */
const char *pcr_layout(void);

#endif
