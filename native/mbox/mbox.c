/*
 * mptcplab-mbox: a middlebox that rewrites forwarded TCP segments (NFQUEUE).
 *
 * Why hand-written: the paper's middleboxes (Raiciu et al., NSDI 2012 §3) include
 * ISN rewriting and payload modification. nftables can set header fields but keeps
 * no per-connection state, so it cannot add an offset to one side's sequence
 * numbers and take it off the other side's ACK and SACK blocks; tc pedit + csum
 * (the kernel selftests' way) needs TC actions this kernel does not have. We know of
 * no library that does per-connection ISN rewriting; NFQUEUE libraries stop at
 * "hand me the packet, take a verdict". The job is small: libnetfilter_queue's
 * netlink helpers around mboxcore.c (pure, unit-tested).
 *
 * Modes (IPv4 TCP; anything else passes unchanged, counted):
 *   isn-offset OFFSET   a connection's client is the sender of its SYN: its
 *                       sequence numbers get +OFFSET, and the ACK and SACK edges of
 *                       the server's segments -OFFSET (both directions must pass).
 *   payload-flip        in segments with payload, invert one byte (--byte-offset,
 *                       the last byte when the payload is shorter), on each subflow
 *                       after its first --after segments and then every --every-th
 *                       (at most --count per subflow when given).
 *   split               (row j) the data segments the same schedule picks leave as two,
 *                       each with every TCP option of the original (its DSS mapping
 *                       too), as a TSO NIC splits: the verdict carries the first half,
 *                       the second is sent after it through a raw socket of the
 *                       router (NFQUEUE cannot turn one packet into two).
 *   merge               (row k) a picked data segment is held until the next segment
 *                       of its connection; when that one continues it and both fit
 *                       --max-len, they leave as one with the first's header and
 *                       options (its DSS mapping covers only its own part) and the
 *                       second is dropped; otherwise, or after 20 ms, the held one
 *                       leaves unchanged.
 * The TCP checksum (and the IPv4 one when the length changes) is recomputed for every
 * changed segment.
 *
 * Not fail-open: the nft rule feeding the queue has no bypass, so packets drop
 * when this process is gone; every action is counted, and SIGTERM/SIGINT (also sent
 * when the parent dies) writes the counters as JSON to --stats and exits 0. Exit 1:
 * setup error, 2: bad arguments, 3: a verdict could not be sent (packets stall).
 * Prints "ready" once the queue is bound.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#include "mboxcore.h"

#define BUFSZ (0xffff + 4096)

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

struct ctx {
	struct mnl_socket *nl;
	uint32_t queue;
	const char *stats;
	struct mb_state *s;
	uint64_t enobufs, verdict_errors, send_errors, raw_errors;
	int raw;                /* split: the raw socket the second halves leave by */
	uint32_t held_id;       /* merge: the segment held for the next one (held_len 0: none) */
	size_t held_len;
	uint8_t held[0x10000];
};

#define HOLD_MS 20

static int send_verdict(struct ctx *c, uint32_t id, int verdict, const uint8_t *pkt, size_t len)
{
	static char buf[BUFSZ];
	struct nlmsghdr *nlh = nfq_nlmsg_put(buf, NFQNL_MSG_VERDICT, c->queue);
	nfq_nlmsg_verdict_put(nlh, (int)id, verdict);
	if (pkt)
		nfq_nlmsg_verdict_put_pkt(nlh, pkt, (uint32_t)len);
	ssize_t r;
	do
		r = mnl_socket_sendto(c->nl, nlh, nlh->nlmsg_len);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		fprintf(stderr, "mptcplab-mbox q%u: sending a verdict failed: %s\n", c->queue, strerror(errno));
		return -1;
	}
	return 0;
}

static int cfg(struct ctx *c, struct nlmsghdr *nlh)
{
	static char buf[BUFSZ];
	nlh->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(c->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	ssize_t n = mnl_socket_recvfrom(c->nl, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	const struct nlmsghdr *r = (const struct nlmsghdr *)buf;
	if (r->nlmsg_type == NLMSG_ERROR)
		return ((const struct nlmsgerr *)mnl_nlmsg_get_payload(r))->error;
	return 0;
}

/* merge: the held segment leaves unchanged */
static int release(struct ctx *c)
{
	if (!c->held_len)
		return 0;
	c->held_len = 0;
	c->s->st.merge_released++;
	return send_verdict(c, c->held_id, NF_ACCEPT, NULL, 0);
}

/* split and merge (one packet in, two or none out: beyond mb_process's one-for-one) */
static int reshape(struct ctx *c, uint32_t id, uint8_t *pkt, size_t len)
{
	struct mb_state *s = c->s;
	if (s->cfg.mode == MB_MERGE && c->held_len) {
		if (pkt && mb_can_append(c->held, c->held_len, pkt, len, s->cfg.max_len)) {
			size_t n = mb_append(c->held, c->held_len, pkt, len);
			c->held_len = 0;
			s->st.merged++;
			/* the merged one leaves before the drop is told: the queue order holds */
			if (send_verdict(c, c->held_id, NF_ACCEPT, c->held, n) < 0)
				return -1;
			return send_verdict(c, id, NF_DROP, NULL, 0);
		}
		if (release(c) < 0)
			return -1;
	}
	if (!pkt || !mb_pick(s, pkt, len))
		return send_verdict(c, id, NF_ACCEPT, NULL, 0);
	if (s->cfg.mode == MB_MERGE) {
		memcpy(c->held, pkt, len);
		c->held_len = len, c->held_id = id;
		return 0;
	}
	static uint8_t second[0x10000];
	size_t first_len, n2 = mb_split(pkt, len, &first_len, second);
	if (!n2)
		return send_verdict(c, id, NF_ACCEPT, NULL, 0);
	/* the kernel forwards the first half within this verdict's sendmsg, so the second,
	 * sent after it, leaves the router behind it */
	if (send_verdict(c, id, NF_ACCEPT, pkt, first_len) < 0)
		return -1;
	struct sockaddr_in to = {.sin_family = AF_INET};
	memcpy(&to.sin_addr, second + 16, 4);
	if (sendto(c->raw, second, n2, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		c->raw_errors++; /* the second half is lost: counted, the run judged on it */
	else
		s->st.split++;
	return 0;
}

static int handle(struct ctx *c, const char *buf, size_t len)
{
	int rem = (int)len;
	for (const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf; mnl_nlmsg_ok(nlh, rem);
	     nlh = mnl_nlmsg_next(nlh, &rem)) {
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			if (((const struct nlmsgerr *)mnl_nlmsg_get_payload(nlh))->error)
				c->verdict_errors++;
			continue;
		}
		struct nlattr *attr[NFQA_MAX + 1] = {0};
		if (nfq_nlmsg_parse(nlh, attr) < 0 || !attr[NFQA_PACKET_HDR])
			continue;
		const struct nfqnl_msg_packet_hdr *ph = mnl_attr_get_payload(attr[NFQA_PACKET_HDR]);
		uint32_t id = ntohl(ph->packet_id);
		uint8_t *pkt = attr[NFQA_PAYLOAD] ? mnl_attr_get_payload(attr[NFQA_PAYLOAD]) : NULL;
		size_t plen = attr[NFQA_PAYLOAD] ? mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]) : 0;
		if (c->s->cfg.mode == MB_SPLIT || c->s->cfg.mode == MB_MERGE) {
			if (reshape(c, id, pkt, plen) < 0)
				return -1;
			continue;
		}
		int changed = pkt ? mb_process(c->s, pkt, plen) : 0;
		if (send_verdict(c, id, NF_ACCEPT, changed ? pkt : NULL, plen) < 0)
			return -1;
	}
	return 0;
}

static const char *const MODES[] = {"isn-offset", "payload-flip", "split", "merge"};

static void write_stats(struct ctx *c)
{
	const struct mb_stats *t = &c->s->st;
	const struct mb_cfg *g = &c->s->cfg;
	char line[2048];
	snprintf(line, sizeof(line),
		 "{\"mbox\": \"%s\", \"queue\": %u, \"offset\": %u, \"after\": %u, \"every\": %u, \"byte_offset\": %u,"
		 " \"count\": %u, \"packets\": %" PRIu64 ", \"not_ipv4_tcp\": %" PRIu64 ", \"malformed\": %" PRIu64
		 ", \"syns\": %" PRIu64 ", \"untracked\": %" PRIu64 ", \"table_full\": %" PRIu64
		 ", \"seq_rewritten\": %" PRIu64 ", \"ack_rewritten\": %" PRIu64 ", \"sack_blocks_rewritten\": %" PRIu64
		 ", \"data_segments\": %" PRIu64 ", \"flipped\": %" PRIu64
		 ", \"picked\": %" PRIu64 ", \"split\": %" PRIu64 ", \"merged\": %" PRIu64
		 ", \"merge_released\": %" PRIu64 ", \"max_len\": %u, \"raw_errors\": %" PRIu64
		 ", \"enobufs\": %" PRIu64 ", \"verdict_errors\": %" PRIu64 "}\n",
		 MODES[g->mode], c->queue, g->offset, g->after, g->every,
		 g->byte_offset, g->count, t->packets, t->not_ipv4_tcp, t->malformed, t->syns, t->untracked, t->table_full,
		 t->seq_rewritten, t->ack_rewritten, t->sack_blocks_rewritten, t->data_segments, t->flipped,
		 t->picked, t->split, t->merged, t->merge_released, g->max_len, c->raw_errors,
		 c->enobufs, c->verdict_errors);
	fprintf(stderr, "mptcplab-mbox: %s", line);
	if (!c->stats)
		return;
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s.tmp", c->stats);
	FILE *f = fopen(tmp, "w");
	if (!f || fputs(line, f) < 0 || fclose(f) != 0 || rename(tmp, c->stats) != 0)
		fprintf(stderr, "mptcplab-mbox: cannot write %s: %s\n", c->stats, strerror(errno));
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mptcplab-mbox --queue N [--stats FILE] isn-offset OFFSET\n"
		"       mptcplab-mbox --queue N [--stats FILE] [--after K] [--every M] [--byte-offset B] [--count C] payload-flip\n"
		"       mptcplab-mbox --queue N [--stats FILE] [--after K] [--every M] split\n"
		"       mptcplab-mbox --queue N [--stats FILE] [--after K] [--every M] [--max-len L] merge\n");
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end || !*s || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	static struct mb_state state;
	static struct ctx c;
	c.s = &state, c.queue = UINT32_MAX, c.raw = -1;
	state.cfg.after = 20, state.cfg.every = 1, state.cfg.byte_offset = 0, state.cfg.max_len = 1500;
	static const struct option lo[] = {{"queue", 1, 0, 'q'}, {"stats", 1, 0, 's'}, {"after", 1, 0, 'a'},
					   {"every", 1, 0, 'e'}, {"byte-offset", 1, 0, 'b'},
					   {"max-len", 1, 0, 'm'}, {"count", 1, 0, 'c'}, {0, 0, 0, 0}};
	int o;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		int bad = 0;
		switch (o) {
		case 'q': bad = parse_u32(optarg, &c.queue); break;
		case 's': c.stats = optarg; break;
		case 'a': bad = parse_u32(optarg, &state.cfg.after); break;
		case 'e': bad = parse_u32(optarg, &state.cfg.every) || state.cfg.every == 0; break;
		case 'b': bad = parse_u32(optarg, &state.cfg.byte_offset); break;
		case 'c': bad = parse_u32(optarg, &state.cfg.count); break;
		case 'm': bad = parse_u32(optarg, &state.cfg.max_len) || state.cfg.max_len < 40 ||
			      state.cfg.max_len > 0xffff; break;
		default: bad = 1;
		}
		if (bad) {
			usage();
			return 2;
		}
	}
	if (c.queue > 65535 || optind >= argc) {
		usage();
		return 2;
	}
	if (!strcmp(argv[optind], "isn-offset") && optind + 2 == argc && !parse_u32(argv[optind + 1], &state.cfg.offset)) {
		state.cfg.mode = MB_ISN_OFFSET;
	} else if (!strcmp(argv[optind], "payload-flip") && optind + 1 == argc) {
		state.cfg.mode = MB_PAYLOAD_FLIP;
	} else if (!strcmp(argv[optind], "split") && optind + 1 == argc) {
		state.cfg.mode = MB_SPLIT;
	} else if (!strcmp(argv[optind], "merge") && optind + 1 == argc) {
		state.cfg.mode = MB_MERGE;
	} else {
		usage();
		return 2;
	}

	sigset_t block, waitmask;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid() != parent)
		g_stop = 1;

	static char buf[BUFSZ];
	struct nlmsghdr *nlh;
	int err;
	/* IPPROTO_RAW: the header is ours (IP_HDRINCL), the client's source address kept */
	if (state.cfg.mode == MB_SPLIT && (c.raw = socket(AF_INET, SOCK_RAW, IPPROTO_RAW)) < 0) {
		fprintf(stderr, "mptcplab-mbox: raw socket: %s\n", strerror(errno));
		return 1;
	}
	c.nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!c.nl || mnl_socket_bind(c.nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		fprintf(stderr, "mptcplab-mbox: netlink: %s\n", strerror(errno));
		return 1;
	}
	int sz = 16 * 1024 * 1024;
	setsockopt(mnl_socket_get_fd(c.nl), SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
	nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, c.queue);
	nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_BIND);
	if ((err = cfg(&c, nlh)) < 0) {
		fprintf(stderr, "mptcplab-mbox: binding queue %u failed: %s\n", c.queue, strerror(-err));
		return 1;
	}
	/* whole packets; no NFQA_CFG_F_GSO, so the kernel completes partial checksums
	 * before handing a packet over and ours are computed over final bytes */
	nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, c.queue);
	nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, 0xffff);
	nfq_nlmsg_cfg_put_qmaxlen(nlh, 8192);
	if ((err = cfg(&c, nlh)) < 0) {
		fprintf(stderr, "mptcplab-mbox: configuring queue %u failed: %s\n", c.queue, strerror(-err));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);

	int rc = 0, fd = mnl_socket_get_fd(c.nl);
	while (!g_stop) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		struct timespec hold = {.tv_nsec = HOLD_MS * 1000000L};
		int r = ppoll(&pfd, 1, c.held_len ? &hold : NULL, &waitmask);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = 3;
			break;
		}
		if (r == 0) { /* nothing came after the held segment in time */
			if (release(&c) < 0) {
				rc = 3;
				break;
			}
			continue;
		}
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == ENOBUFS) {
				c.enobufs++; /* the kernel dropped queued packets: counted, reported */
				continue;
			}
			if (errno == EAGAIN || errno == EINTR)
				continue;
			fprintf(stderr, "mptcplab-mbox q%u: recv: %s\n", c.queue, strerror(errno));
			rc = 3;
			break;
		}
		if (handle(&c, buf, (size_t)n) < 0) {
			rc = 3;
			break;
		}
	}
	release(&c);
	write_stats(&c);
	mnl_socket_close(c.nl);
	return rc;
}
