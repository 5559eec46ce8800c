/*
 * pcapread: capture files -> one row per packet, for the capture analysis.
 *
 * Why this is hand-written: the analysis needs a few dozen header fields of
 * every packet (TCP numbers, the MPTCP option's subtypes, keys, tokens and DSS
 * mapping, ICMP errors with the quoted header). tshark gives them but builds a
 * dissection tree per packet (2.6 s for 135k packets, 10x slower than reading
 * the file); mptcpanalyzer goes through tshark too, and mptcptrace knows MPTCP
 * v0 only. libpcap (Debian's libpcap-dev) reads the files (pcap and pcapng,
 * micro- and nanosecond); the decoding below is plain header arithmetic
 * (RFC 791, 8200, 9293, 792, 4443 and RFC 8684 for MPTCP v1, with the v0
 * layouts of RFC 6824 where they differ) with every read bounds-checked
 * against the captured length, since captures are cut by a snaplen.
 *
 * Each packet is decoded into a row on the stack, then its fields are appended
 * to one growing array per field (no per-packet allocation); addresses are
 * interned in a small hash table, so a row holds 4-byte indices instead of
 * 16-byte addresses and Python formats each distinct address once.
 */
#include "pcapread.h"

#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct addr {
    uint8_t fam;         /* 4 or 6 */
    uint8_t a[16];
};

struct columns {
#define PCR_X(type, name, np) type *name;
    PCR_FIELDS(PCR_X)
#undef PCR_X
};

struct pcr_file {
    struct columns col;
    size_t n, cap;
    struct addr *addrs;  /* addrs[0] unused: index 0 means "no address" */
    size_t naddr, addrcap;
    uint32_t *hash;      /* open addressing, 0 = empty slot */
    size_t hashcap;
    int linktype;
    int oom;
    char warning[512];
};

enum { T_MPC = 0, T_JOIN, T_DSS, T_ADD, T_RM, T_PRIO, T_FAIL, T_FCLOSE, T_TCPRST };

static inline uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

/* ---------------------------------------------------------------- addresses */

static uint32_t addr_hash(const struct addr *a)
{
    uint32_t h = 2166136261u ^ a->fam;                       /* FNV-1a */
    for (int i = 0; i < (a->fam == 4 ? 4 : 16); i++)
        h = (h ^ a->a[i]) * 16777619u;
    return h;
}

static int addr_eq(const struct addr *x, const struct addr *y)
{
    return x->fam == y->fam && memcmp(x->a, y->a, x->fam == 4 ? 4 : 16) == 0;
}

static int hash_grow(pcr_file *f)
{
    size_t cap = f->hashcap ? f->hashcap * 2 : 64;
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h)
        return -1;
    for (size_t i = 1; i < f->naddr; i++) {
        size_t s = addr_hash(&f->addrs[i]) & (cap - 1);
        while (h[s])
            s = (s + 1) & (cap - 1);
        h[s] = (uint32_t)i;
    }
    free(f->hash);
    f->hash = h;
    f->hashcap = cap;
    return 0;
}

/* Index of the address (interned on first sight), 0 when out of memory. */
static uint32_t intern(pcr_file *f, int fam, const uint8_t *bytes)
{
    struct addr a = { .fam = (uint8_t)fam };
    memcpy(a.a, bytes, fam == 4 ? 4 : 16);
    if (2 * f->naddr >= f->hashcap && hash_grow(f) < 0)
        goto oom;
    size_t s = addr_hash(&a) & (f->hashcap - 1);
    while (f->hash[s]) {
        if (addr_eq(&f->addrs[f->hash[s]], &a))
            return f->hash[s];
        s = (s + 1) & (f->hashcap - 1);
    }
    if (f->naddr == f->addrcap) {
        size_t cap = f->addrcap ? f->addrcap * 2 : 16;
        struct addr *n = realloc(f->addrs, cap * sizeof *n);
        if (!n)
            goto oom;
        f->addrs = n;
        f->addrcap = cap;
    }
    if (f->naddr == 0)
        f->naddr = 1;            /* slot 0 stays "none" */
    f->addrs[f->naddr] = a;
    f->hash[s] = (uint32_t)f->naddr;
    return (uint32_t)f->naddr++;
oom:
    f->oom = 1;
    return 0;
}

/* ---------------------------------------------------------------- MPTCP */

/* One MPTCP option (kind 30), o[0..len). Only the first option of each
 * subtype in a packet is recorded (tshark's first occurrence). */
static void mptcp_option(pcr_file *f, const uint8_t *o, unsigned len, pcr_row *r)
{
    if (len < 3) {
        r->has |= PCR_MALFORMED;
        return;
    }
    unsigned sub = o[2] >> 4;
    uint16_t bit = (uint16_t)(1u << sub);
    if (r->mp & bit)
        return;
    r->mp |= bit;
    switch (sub) {
    case T_MPC:
        /* v1: SYN 4, SYN/ACK 12 (sender's key), ACK 20 (both keys),
         * ACK with data 22/24 (+ data-level length, + checksum); v0 SYN 12 */
        if (len < 4)
            break;
        r->has |= PCR_MPC;
        r->mpc_ver = o[2] & 0x0f;
        r->mpc_flags = o[3];
        if (len >= 12) {
            r->sendkey = be64(o + 4);
            r->has |= PCR_SENDKEY;
        }
        if (len >= 20) {
            r->recvkey = be64(o + 12);
            r->has |= PCR_RECVKEY;
        }
        if (len >= 22) {
            r->dll = be16(o + 20);
            r->has |= PCR_DLL;
        }
        if (len >= 24)
            r->has |= PCR_CSUM;
        break;
    case T_JOIN:
        /* SYN 12 (B, id, token, nonce), SYN/ACK 16 (B, id, HMAC64, nonce), ACK 24 */
        if (len == 12 || len == 16) {
            r->backup = o[2] & 0x01;
            r->addr_id = o[3];
            r->has |= PCR_BACKUP | PCR_ADDR_ID;
            if (len == 12) {
                r->recvtok = be32(o + 4);
                r->has |= PCR_RECVTOK;
            }
        } else if (len == 24) {
            r->has |= PCR_JOINHMAC;
        } else {
            r->has |= PCR_MALFORMED;
        }
        break;
    case T_DSS: {
        if (len < 4) {
            r->has |= PCR_MALFORMED;
            break;
        }
        uint8_t fl = o[3];
        unsigned off = 4;
        r->dss_flags = fl;
        if (fl & 0x10)
            r->has |= PCR_DATAFIN;
        if (fl & 0x01) {                         /* A: data ACK present */
            unsigned w = (fl & 0x02) ? 8 : 4;    /* a: 8 octets */
            if (off + w > len) {
                r->has |= PCR_MALFORMED;
                break;
            }
            r->data_ack = w == 8 ? be64(o + off) : be32(o + off);
            r->has |= PCR_DACK | (w == 8 ? PCR_DACK64 : 0);
            off += w;
        }
        if (fl & 0x04) {                         /* M: mapping present */
            unsigned w = (fl & 0x08) ? 8 : 4;    /* m: DSN is 8 octets */
            if (off + w + 6 > len) {
                r->has |= PCR_MALFORMED;
                break;
            }
            r->dsn = w == 8 ? be64(o + off) : be32(o + off);
            off += w;
            r->ssn = be32(o + off);
            r->dll = be16(o + off + 4);
            off += 6;
            r->has |= PCR_DSN | PCR_DLL | (w == 8 ? PCR_DSN64 : 0);
            if (off + 2 <= len) {                /* the length tells the checksum */
                r->has |= PCR_CSUM;
                off += 2;
            }
        }
        if (off != len)
            r->has |= PCR_MALFORMED;
        break;
    }
    case T_ADD: {
        /* v1 (RFC 8684): low nibble = reserved + E; IPv4 8, +2 port, +8 HMAC;
         * IPv6 20, +2 port, +8 HMAC. v0 (RFC 6824): low nibble = IP version. */
        unsigned nib = o[2] & 0x0f;
        int fam, port, hmac;
        if (len < 4) {
            r->has |= PCR_MALFORMED;
            break;
        }
        if (nib == 4 || nib == 6) {
            fam = (int)nib;
            port = len == (fam == 4 ? 10u : 22u);
            hmac = 0;
        } else {
            switch (len) {
            case 8:  fam = 4; port = 0; hmac = 0; break;
            case 10: fam = 4; port = 1; hmac = 0; break;
            case 16: fam = 4; port = 0; hmac = 1; break;
            case 18: fam = 4; port = 1; hmac = 1; break;
            case 20: fam = 6; port = 0; hmac = 0; break;
            case 22: fam = 6; port = 1; hmac = 0; break;
            case 28: fam = 6; port = 0; hmac = 1; break;
            case 30: fam = 6; port = 1; hmac = 1; break;
            default: fam = 0; port = 0; hmac = 0; break;
            }
            if (nib & 0x01)
                r->has |= PCR_ADDECHO;
        }
        unsigned alen = fam == 4 ? 4 : 16;
        if (!fam || 4 + alen + (port ? 2u : 0u) > len) {
            r->has |= PCR_MALFORMED;
            break;
        }
        r->addr_id = o[3];
        r->has |= PCR_ADDR_ID;
        r->addaddr = intern(f, fam, o + 4);
        if (port) {
            r->add_port = be16(o + 4 + alen);
            r->has |= PCR_ADDPORT;
        }
        if (hmac)
            r->has |= PCR_ADDHMAC;
        break;
    }
    case T_RM: {
        unsigned n = len - 3;
        r->rm_n = (uint8_t)(n > 255 ? 255 : n);
        for (unsigned i = 0; i < n && i < 8; i++)
            r->rm_ids |= (uint64_t)o[3 + i] << (8 * i);
        break;
    }
    case T_PRIO:
        r->backup = o[2] & 0x01;
        r->has |= PCR_BACKUP;
        if (len >= 4) {                          /* v0 carries an address id */
            r->addr_id = o[3];
            r->has |= PCR_ADDR_ID;
        }
        break;
    case T_FAIL:
        if (len < 12) {
            r->has |= PCR_MALFORMED;
            break;
        }
        r->fail_dsn = be64(o + 4);
        r->has |= PCR_FAILDSN;
        break;
    case T_FCLOSE:
        if (len < 12) {
            r->has |= PCR_MALFORMED;
            break;
        }
        r->recvkey = be64(o + 4);
        r->has |= PCR_RECVKEY;
        break;
    case T_TCPRST:
        if (len < 4) {
            r->has |= PCR_MALFORMED;
            break;
        }
        r->rst_flags = o[2] & 0x0f;
        r->rst_reason = o[3];
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------- TCP, IP */

/* TCP header at p (n captured bytes); ip_payload: the IP layer's payload
 * length (reported, not captured), or -1 when unknown. */
static void tcp(pcr_file *f, const uint8_t *p, size_t n, long ip_payload, pcr_row *r)
{
    if (n < 4) {
        r->has |= PCR_TRUNC;
        return;
    }
    r->has |= PCR_TCP;
    r->sport = be16(p);
    r->dport = be16(p + 2);
    if (n < 8) {
        r->has |= PCR_TRUNC;
        return;
    }
    r->seq = be32(p + 4);
    r->has |= PCR_SEQ;
    if (n < 14) {
        r->has |= PCR_TRUNC;
        return;
    }
    r->ack = be32(p + 8);
    unsigned hl = (p[12] >> 4) * 4u;
    r->flags = (uint16_t)((p[12] & 0x0f) << 8 | p[13]);
    r->has |= PCR_TCPHDR;
    if (n >= 16)
        r->win = be16(p + 14);
    if (hl < 20) {
        r->has |= PCR_MALFORMED;
        return;
    }
    if (ip_payload >= (long)hl)
        r->tlen = (int32_t)(ip_payload - (long)hl);
    size_t end = hl;
    if (end > n) {
        r->has |= PCR_TRUNC;
        end = n;
    }
    size_t i = 20;
    while (i < end) {
        uint8_t kind = p[i];
        if (kind == 0)                           /* end of option list */
            break;
        if (kind == 1) {                         /* NOP */
            i++;
            continue;
        }
        if (i + 1 >= end) {
            r->has |= PCR_TRUNC;
            break;
        }
        unsigned len = p[i + 1];
        if (len < 2) {
            r->has |= PCR_MALFORMED;
            break;
        }
        if (i + len > end) {
            r->has |= (i + len > hl) ? PCR_MALFORMED : PCR_TRUNC;
            break;
        }
        if (kind == 30)
            mptcp_option(f, p + i, len, r);
        else if (kind == 2 && len == 4) {        /* MSS (RFC 9293 section 3.2) */
            r->mss = be16(p + i + 2);
            r->has |= PCR_MSS;
        }
        else if (kind == 8 && len == 10) {       /* timestamps (RFC 7323 section 3) */
            r->tsval = be32(p + i + 2);
            r->tsecr = be32(p + i + 6);
            r->has |= PCR_TS;
        }
        i += len;
    }
}

static void ip(pcr_file *f, const uint8_t *p, size_t n, pcr_row *r, int quoted);

static int icmp_is_error4(uint8_t type) { return type == 3 || type == 4 || type == 5 || type == 11 || type == 12; }

static void icmp(pcr_file *f, const uint8_t *p, size_t n, pcr_row *r, int v6)
{
    if (n < 2) {
        r->has |= PCR_TRUNC;
        return;
    }
    r->has |= PCR_ICMP;
    r->icmp_type = p[0];
    r->icmp_code = p[1];
    int err;
    if (v6) {
        err = p[0] >= 1 && p[0] <= 4;            /* unreachable, too big, time, parameter */
        if (p[0] == 2 && n >= 8) {
            r->icmp_mtu = be32(p + 4);
            r->has |= PCR_ICMP_MTU;
        }
    } else {
        err = icmp_is_error4(p[0]);
        if (p[0] == 3 && p[1] == 4 && n >= 8) {
            r->icmp_mtu = be16(p + 6);
            r->has |= PCR_ICMP_MTU;
        }
    }
    if (err && n > 8)
        ip(f, p + 8, n - 8, r, 1);
}

/* IPv4 or IPv6 header at p (n captured bytes). quoted: inside an ICMP error,
 * where the quoted packet is usually cut, so its length is not trusted to
 * bound the captured bytes. */
static void ip(pcr_file *f, const uint8_t *p, size_t n, pcr_row *r, int quoted)
{
    if (n < 1) {
        r->has |= PCR_TRUNC;
        return;
    }
    unsigned ver = p[0] >> 4;
    uint8_t proto;
    size_t hl;
    long payload;                                /* IP payload length as reported */
    uint32_t src, dst;
    unsigned len;
    uint8_t ttl;
    int frag_later = 0;
    if (ver == 4) {
        if (n < 20) {
            r->has |= PCR_TRUNC;
            return;
        }
        hl = (p[0] & 0x0f) * 4u;
        if (hl < 20) {
            r->has |= PCR_MALFORMED;
            return;
        }
        len = be16(p + 2);
        ttl = p[8];
        proto = p[9];
        frag_later = (be16(p + 6) & 0x1fff) != 0;
        src = intern(f, 4, p + 12);
        dst = intern(f, 4, p + 16);
        payload = (long)len - (long)hl;
        if (!quoted && len >= hl && len < n)
            n = len;                             /* Ethernet padding is not IP */
    } else if (ver == 6) {
        if (n < 40) {
            r->has |= PCR_TRUNC;
            return;
        }
        unsigned plen = be16(p + 4);
        len = plen + 40u > 0xffff ? 0xffff : plen + 40u;
        proto = p[6];
        ttl = p[7];
        src = intern(f, 6, p + 8);
        dst = intern(f, 6, p + 24);
        if (!quoted && plen + 40u < n)
            n = plen + 40u;
        hl = 40;
        payload = (long)plen;
        /* extension headers up to the upper layer */
        for (;;) {
            size_t eh;
            if (proto == 0 || proto == 43 || proto == 60) {          /* hop-by-hop, routing, dest */
                if (hl + 2 > n)
                    break;
                eh = (p[hl + 1] + 1u) * 8u;
            } else if (proto == 44) {                                 /* fragment */
                if (hl + 8 > n)
                    break;
                eh = 8;
                frag_later = (be16(p + hl + 2) & 0xfff8) != 0;
            } else if (proto == 51) {                                 /* AH */
                if (hl + 2 > n)
                    break;
                eh = (p[hl + 1] + 2u) * 4u;
            } else {
                break;
            }
            proto = p[hl];
            hl += eh;
            payload -= (long)eh;
            if (hl > n)
                break;
        }
    } else {
        r->has |= PCR_MALFORMED;
        return;
    }
    if (quoted) {
        r->has |= PCR_QUOTED;
        r->q_ipv = (uint8_t)ver;
        r->q_src = src;
        r->q_dst = dst;
        r->q_len = (uint16_t)len;
        r->q_ttl = ttl;
    } else {
        r->has |= PCR_IP;
        r->ipv = (uint8_t)ver;
        r->src = src;
        r->dst = dst;
        r->ip_len = (uint16_t)len;
        r->ttl = ttl;
        r->proto = proto;
    }
    if (frag_later || hl > n)
        return;
    if (proto == 6)
        tcp(f, p + hl, n - hl, payload, r);
    else if (!quoted && proto == 1 && ver == 4)
        icmp(f, p + hl, n - hl, r, 0);
    else if (!quoted && proto == 58 && ver == 6)
        icmp(f, p + hl, n - hl, r, 1);
}

/* ---------------------------------------------------------------- link layer */

static void by_ethertype(pcr_file *f, unsigned et, const uint8_t *p, size_t n, pcr_row *r)
{
    if (et == 0x0800 || et == 0x86dd)
        ip(f, p, n, r, 0);
}

static void frame(pcr_file *f, const uint8_t *p, size_t n, pcr_row *r)
{
    switch (f->linktype) {
    case DLT_EN10MB: {
        if (n < 14) {
            r->has |= PCR_TRUNC;
            return;
        }
        size_t off = 14;
        unsigned et = be16(p + 12);
        while (et == 0x8100 || et == 0x88a8 || et == 0x9100) {   /* VLAN tags */
            if (off + 4 > n) {
                r->has |= PCR_TRUNC;
                return;
            }
            et = be16(p + off + 2);
            off += 4;
        }
        by_ethertype(f, et, p + off, n - off, r);
        break;
    }
#ifdef DLT_LINUX_SLL
    case DLT_LINUX_SLL:                          /* tcpdump -i any, libpcap < 1.10 */
        if (n < 16) {
            r->has |= PCR_TRUNC;
            return;
        }
        by_ethertype(f, be16(p + 14), p + 16, n - 16, r);
        break;
#endif
#ifdef DLT_LINUX_SLL2
    case DLT_LINUX_SLL2:                         /* tcpdump -i any, libpcap >= 1.10 */
        if (n < 20) {
            r->has |= PCR_TRUNC;
            return;
        }
        by_ethertype(f, be16(p), p + 20, n - 20, r);
        break;
#endif
    case DLT_RAW:
#ifdef DLT_IPV4
    case DLT_IPV4:
    case DLT_IPV6:
#endif
        ip(f, p, n, r, 0);
        break;
    case DLT_NULL:
    case DLT_LOOP: {                             /* BSD loopback: 4-byte address family */
        if (n < 4) {
            r->has |= PCR_TRUNC;
            return;
        }
        uint32_t fam;
        if (f->linktype == DLT_LOOP)
            fam = be32(p);
        else
            memcpy(&fam, p, 4);                  /* host order of the writer */
        if (fam > 0xffff)
            fam = __builtin_bswap32(fam);
        if (fam == 2 || fam == 10 || fam == 24 || fam == 28 || fam == 30)
            ip(f, p + 4, n - 4, r, 0);
        break;
    }
    default:
        break;
    }
}

/* ---------------------------------------------------------------- file */

/* Makes room for one more row; -1 when out of memory. */
static int reserve(pcr_file *f)
{
    if (f->n < f->cap)
        return 0;
    size_t cap = f->cap ? f->cap * 2 : 65536;
#define PCR_X(type, name, np) \
    { \
        type *c = realloc(f->col.name, cap * sizeof *c); \
        if (!c) \
            goto oom; \
        f->col.name = c; \
    }
    PCR_FIELDS(PCR_X)
#undef PCR_X
    f->cap = cap;
    return 0;
oom:
    f->oom = 1;
    return -1;
}

static void append(pcr_file *f, const pcr_row *r)
{
    size_t i = f->n++;
#define PCR_X(type, name, np) f->col.name[i] = r->name;
    PCR_FIELDS(PCR_X)
#undef PCR_X
}

pcr_file *pcr_read(const char *path, char *err, size_t errlen)
{
    char eb[PCAP_ERRBUF_SIZE] = "";
    pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, eb);
    if (!pc) {
        snprintf(err, errlen, "%s", eb);
        return NULL;
    }
    pcr_file *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        pcap_close(pc);
        return NULL;
    }
    f->linktype = pcap_datalink(pc);
    struct pcap_pkthdr *h;
    const u_char *data;
    int rc;
    uint32_t no = 0;
    while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
        if (reserve(f) < 0)
            break;
        pcr_row r;
        memset(&r, 0, sizeof r);
        r.tlen = -1;
        r.frame = ++no;
        r.t_ns = (int64_t)h->ts.tv_sec * 1000000000 + (int64_t)h->ts.tv_usec;
        r.wirelen = h->len;
        frame(f, data, h->caplen, &r);
        append(f, &r);
    }
    if (f->oom)
        snprintf(f->warning, sizeof f->warning, "out of memory after %zu packets", f->n);
    else if (rc == PCAP_ERROR)
        snprintf(f->warning, sizeof f->warning, "%s", pcap_geterr(pc));
    pcap_close(pc);
    return f;
}

size_t pcr_count(const pcr_file *f) { return f->n; }
const void *pcr_column(const pcr_file *f, size_t i)
{
    const void *cols[] = {
#define PCR_X(type, name, np) f->col.name,
        PCR_FIELDS(PCR_X)
#undef PCR_X
    };
    return i < sizeof cols / sizeof cols[0] ? cols[i] : NULL;
}
size_t pcr_addr_count(const pcr_file *f) { return f->naddr; }
int pcr_linktype(const pcr_file *f) { return f->linktype; }
const char *pcr_warning(const pcr_file *f) { return f->warning; }

int pcr_addr(const pcr_file *f, size_t i, uint8_t out[16])
{
    if (i == 0 || i >= f->naddr)
        return 0;
    memcpy(out, f->addrs[i].a, 16);
    return f->addrs[i].fam;
}

void pcr_free(pcr_file *f)
{
    if (!f)
        return;
#define PCR_X(type, name, np) free(f->col.name);
    PCR_FIELDS(PCR_X)
#undef PCR_X
    free(f->addrs);
    free(f->hash);
    free(f);
}

const char *pcr_layout(void)
{
    /* a constant string built by the preprocessor: nothing to initialise, so it
     * is safe to call from several threads */
#define PCR_X(type, name, np) #name ":" np ";"
    return PCR_FIELDS(PCR_X);
#undef PCR_X
}
