/*
 * mptcplab-delayline: a netem-like one-way delay line for kernels without sch_netem.
 *
 * Why this is hand-written: the usual tool, tc netem, is a kernel module that
 * many kernels do not ship (this project's CI kernel, Fedora/RHEL without
 * kernel-modules-extra, minimal cloud and microVM kernels). We know of no
 * well-kept library or distribution package that gives a netem-like delay on
 * such kernels: NFQUEUE libraries stop at "hand me the packet, take a
 * verdict", and a delay needs timing, ordering and overflow handling on top.
 * The job is small enough to own: a few hundred lines around
 * libnetfilter_queue's netlink helpers (Debian packages them).
 *
 * What it does: binds one NFQUEUE number (the netfilter rule that feeds it,
 * iptables or nft, has no bypass, so if this process is not running the
 * packets are dropped, never passed undelayed), holds every packet for --delay-us (plus optional jitter
 * that never reorders) and then accepts it, in FIFO order. With --rate-bps
 * (which mptcplab passes for every delayed direction by default) it also does
 * the link's rate and drop-tail queue, in front of the delay; without it they
 * stay in the kernel's tbf at the sender's egress. With --trace FILE instead
 * (exclusive with --rate-bps) the link's capacity is replayed from a Mahimahi
 * packet-delivery trace (delaysched.h: the trace stage), through a drop-tail
 * queue of --limit-bytes and/or --limit-packets, then delayed; the trace is at
 * --trace-offset-ms when the line starts (just before it binds the queue), and
 * the stats say when that was (trace.start_unix_ns) and what the stage did.
 *
 * Design points:
 *  - metadata-only copy: packet copy mode with a 1-byte range (so the kernel
 *    still reports each packet's length); the packet bytes never cross into
 *    userspace and a verdict by id is all we send back.
 *  - NFQA_CFG_F_GSO: GSO skbs are queued whole instead of being segmented.
 *  - the kernel queue length comes from --maxlen (the default 1024 holds only
 *    ~12 ms of 1500-byte packets at 1 Gbit/s and drops beyond it).
 *  - a big netlink receive buffer (SO_RCVBUFFORCE); when it overflows anyway
 *    (ENOBUFS) the kernel has dropped packets: this is counted, reported on
 *    stderr and in the stats, never hidden.
 *  - timing: CLOCK_MONOTONIC, ppoll with a nanosecond timeout, timer slack set
 *    to 1 ns, every due packet released in one batch verdict.
 *  - arrival time: the kernel's receive timestamp of the packet (taken when
 *    the receiving veth got it; we switch skb timestamping on by holding a
 *    socket with SO_TIMESTAMP), else the time we read the message. With kernel
 *    timestamps we need not wake up for every arrival: while packets are held,
 *    no newcomer can be due before the oldest one (FIFO, non-decreasing
 *    release times), so we sleep until the head is due (at most LAZY_MAX_NS)
 *    and read the newcomers then. That halves the wake-ups at low packet rates,
 *    and the arrival time no longer includes our own wake-up latency.
 *  - --rt-prio: SCHED_FIFO, so a busy host does not delay releases by
 *    milliseconds (the Python side passes it by default).
 *  - prints "ready" on stdout once the queue is bound and configured; on
 *    SIGTERM/SIGINT (also sent by the kernel when the parent dies) writes a
 *    stats JSON to --stats and exits 0; exit status 1 for setup errors, 2 for
 *    bad arguments, 3 when it had to stop mid-run (packets then drop).
 *
 *  - diagnosis in the stats: delivery_us (kernel stamp -> our read),
 *    due_on_read (packets already due when read), verdict_calls /
 *    verdict_mean_us / verdict_max_us / max_batch (time inside the batch
 *    verdict, where the kernel runs the receive path of the released packets
 *    and whatever softirq work is pending), verdict_offcpu_* (wall minus our
 *    CPU time there, for verdicts of >= --offcpu-min-batch packets), wakeups,
 *    wake_late_us (how late timed sleeps woke up: the line waited for a CPU)
 *    and stalls (the longest verdict calls and late wake-ups, with their
 *    CLOCK_MONOTONIC time, so the lines of one host can be lined up).
 *  - --timer abs (default): the sleep ends at the release time however long
 *    the verdict before it took; rel is the older behaviour, which counted the
 *    timeout from before that verdict and so added its duration (20-60 us on
 *    average, ms when it stalled) to the next release.
 *
 * Limits (measured, docs/architecture.md): at 100 Mbit/s releases are on time
 * (p99 ~0.1 ms); at 400 Mbit/s on a loaded 2-core VM some verdict calls run
 * 20-180 ms on the CPU (30-60 us per released packet, against ~6 us usually),
 * so lateness p99 reaches tens of ms. The cost is the kernel's TCP work for the
 * released packets, not this loop: batch caps, a coarser release clock,
 * pinning and RPS did not help. Most of that work is triggered by tbf at the
 * sender, whose watchdog fires once per packet at line rate; --rate-bps /
 * --limit-bytes move the link's rate and queue in here instead (lateness p99
 * at 400 Mbit/s x 100 ms: 2.4 ms instead of 30 ms, same load). --slot-us
 * bounds how often we release: each sleep and wake-up exits to the hypervisor
 * in a VM, ~45% of our CPU at 400 Mbit/s without it (perf).
 *
 * Build: make -C native; test: make -C native test (the scheduling core,
 * delaysched.c, is unit-tested with a fake clock).
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
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#include "delaysched.h"
#include "dlstats.h"
#include "dlcontrol.h"

#define RX_BATCH 64     /* messages per recvmmsg() */
#define RX_BUFSZ 4096   /* one metadata-only packet message is ~150 bytes */
#define RX_ROUNDS 16    /* recvmmsg rounds before checking due packets again */
#define COPY_RANGE 1    /* bytes of each packet copied to us: see setup_queue */
#define MSG_BUFSZ 8192  /* config requests, verdicts, ACKs */
#define DEFAULT_MAXLEN 8192
#define ETH_HDR_LEN 14
#define DEFAULT_RCVBUF (64 * 1024 * 1024)
/* Verdicts releasing at least this many packets get the off-CPU diagnosis
 * (default of --offcpu-min-batch). */
#define OFFCPU_MIN_BATCH 32
/* Longest sleep without reading the socket while packets are held: bounds the
 * messages waiting in the receive buffer (10 ms x 100k packets/s = 1000). */
#define LAZY_MAX_NS (10 * 1000000ULL)
/* A kernel timestamp further than this in the past is not believed (clock step). */
#define TS_MAX_AGE_NS (10 * 1000000000ULL)

struct opts {
	uint32_t queue;
	uint64_t delay_us;
	uint64_t jitter_us;
	uint64_t seed;
	uint32_t maxlen;
	uint64_t rcvbuf;
	int rt_prio;
	uint64_t rate_bps;    /* 0: the rate is done elsewhere (tbf) */
	uint64_t limit_bytes; /* queue limit of the rate or trace stage */
	uint64_t limit_packets; /* queue limit of the trace stage in packets */
	const char *trace;    /* --trace: a Mahimahi delivery trace instead of a rate */
	uint64_t trace_offset_ms;
	uint64_t slot_us;     /* least time between two releases, 0: none */
	uint32_t offcpu_min_batch; /* verdicts of at least this many packets get the off-CPU diagnosis */
	int rel_timer;        /* --timer rel: the sleep counts from before the release (older behaviour) */
	const char *stats;
	const char *control; /* --control: run-time delay changes (dlcontrol.h) */
};

struct ctx {
	struct opts o;
	struct mnl_socket *nl;
	int fd;
	uint32_t seq;
	struct dl_sched sched;
	struct dl_hist *hist;
	struct dl_hist *deliv; /* read time - kernel arrival stamp */
	struct dl_hist *wake;  /* timed sleeps: wake-up - the time asked for */
	struct dl_worst worst; /* the longest stalls, with when */
	/* counters reported in the stats */
	uint64_t packets, bytes, released;
	uint64_t enobufs, ring_full_drops, verdict_errors, truncated, bad_msgs;
	uint64_t arrival_kernel_ts, arrival_read_time;
	/* diagnosis: packets already due when we read them (late before we
	 * could act), verdict calls and the time spent inside them (the kernel
	 * runs the rest of the receive path of released packets there) */
	uint64_t due_on_read, verdict_calls, verdict_ns, verdict_max_ns, wakeups;
	/* wall time inside verdict calls minus our CPU time there: off-CPU */
	uint64_t verdict_offcpu_ns, verdict_offcpu_max_ns;
	uint32_t max_batch;
	uint64_t last_release_ns; /* when release_due last released something */
	uint64_t trace_start_unix_ns; /* CLOCK_REALTIME of the trace stage's start */
	char trace_now[DL_CONTROL_PATH_MAX]; /* the trace of the latest switch ("": none) */
	/* CLOCK_REALTIME - CLOCK_MONOTONIC, refreshed per read: converts kernel
	 * (realtime) packet timestamps to our monotonic timeline */
	int64_t real_minus_mono;
	/* last packet carried a usable kernel timestamp: we may read lazily */
	int lazy;
	int more_pending; /* drain() stopped before the socket was empty */
	int ts_sock;
	uint64_t last_err_log_ns;
	/* setup: which config request we wait an ACK for */
	uint32_t wait_seq;
	int ack_done;
	int ack_err;
	/* receive buffers */
	struct mmsghdr msgs[RX_BATCH];
	struct iovec iov[RX_BATCH];
	char (*bufs)[RX_BUFSZ];
};

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_reload; /* SIGUSR1: re-read --control */

static void on_reload(int sig)
{
	(void)sig;
	g_reload = 1;
}

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mptcplab-delayline --queue N --delay-us D [--jitter-us J] [--seed S]\n"
		"                          [--maxlen PKTS] [--stats FILE] [--rcvbuf BYTES] [--rt-prio P]\n"
		"                          [--rate-bps R [--limit-bytes B]] [--slot-us Q] [--control FILE]\n"
		"                          [--offcpu-min-batch N] [--timer abs|rel]\n"
		"                          [--trace FILE [--trace-offset-ms N] [--limit-bytes B] [--limit-packets P]]\n"
		"Holds every packet of NFQUEUE N for D microseconds (+/- J, never reordered),\n"
		"then accepts it. With --rate-bps, packets are first serialized at R bit/s\n"
		"through a drop-tail queue of B bytes (the link's rate and queue, instead of tbf).\n"
		"With --trace (not with --rate-bps), packets leave at the delivery opportunities of a\n"
		"Mahimahi trace (one ms time per line, 1504 bytes each, looped), from N ms into it,\n"
		"through a drop-tail queue of B bytes and/or P packets, then the delay.\n"
		"--slot-us: release at most once per Q microseconds (fewer wake-ups, up to Q late).\n"
		"Prints 'ready' once bound; SIGTERM writes --stats and exits 0.\n"
		"--control FILE: SIGUSR1 re-reads the delay and jitter from FILE (mptcplab-delayline-ctl).\n"
		"--offcpu-min-batch N: off-CPU diagnosis for verdicts of >= N packets (default 32,\n"
		"  or $MPTCPLAB_DELAYLINE_OFFCPU_MIN_BATCH; 1: every verdict, two more system calls each).\n"
		"--timer abs (default, or $MPTCPLAB_DELAYLINE_TIMER): sleep until the release time;\n"
		"  rel: sleep its distance from before the previous verdict (the older behaviour).\n");
}

static int parse_u64(const char *s, const char *name, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max) {
		fprintf(stderr, "mptcplab-delayline: bad value for --%s: '%s'\n", name, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_min_batch(const char *s, struct opts *o)
{
	uint64_t v;
	if (parse_u64(s, "offcpu-min-batch", UINT32_MAX, &v))
		return -1;
	if (!v) {
		fprintf(stderr, "mptcplab-delayline: bad value for --offcpu-min-batch: '%s' (at least 1)\n", s);
		return -1;
	}
	o->offcpu_min_batch = (uint32_t)v;
	return 0;
}

static int parse_timer(const char *s, struct opts *o)
{
	if (strcmp(s, "abs") && strcmp(s, "rel")) {
		fprintf(stderr, "mptcplab-delayline: bad value for --timer: '%s' (abs or rel)\n", s);
		return -1;
	}
	o->rel_timer = !strcmp(s, "rel");
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{"queue", required_argument, 0, 'q'},   {"delay-us", required_argument, 0, 'd'},
		{"jitter-us", required_argument, 0, 'j'}, {"seed", required_argument, 0, 's'},
		{"maxlen", required_argument, 0, 'm'},  {"stats", required_argument, 0, 'o'},
		{"rcvbuf", required_argument, 0, 'r'},  {"rt-prio", required_argument, 0, 'p'},
		{"rate-bps", required_argument, 0, 'R'}, {"limit-bytes", required_argument, 0, 'L'},
		{"slot-us", required_argument, 0, 'S'},
		{"trace", required_argument, 0, 'F'}, {"trace-offset-ms", required_argument, 0, 'O'},
		{"limit-packets", required_argument, 0, 'P'},
		{"control", required_argument, 0, 'C'},
		{"offcpu-min-batch", required_argument, 0, 'B'}, {"timer", required_argument, 0, 'T'},
		{"help", no_argument, 0, 'h'},          {0, 0, 0, 0},
	};
	int have_q = 0, have_d = 0, c;
	uint64_t v;
	memset(o, 0, sizeof(*o));
	o->maxlen = DEFAULT_MAXLEN;
	o->rcvbuf = DEFAULT_RCVBUF;
	o->seed = 1;
	/* the environment gives the defaults of the diagnosis and comparison switches,
	 * so a whole lab can be run with them without the engine knowing (the stats
	 * record what was used) */
	const char *env = getenv("MPTCPLAB_DELAYLINE_OFFCPU_MIN_BATCH");
	o->offcpu_min_batch = OFFCPU_MIN_BATCH;
	if (env && *env && parse_min_batch(env, o))
		return -1;
	env = getenv("MPTCPLAB_DELAYLINE_TIMER");
	if (env && *env && parse_timer(env, o) < 0)
		return -1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'q':
			if (parse_u64(optarg, "queue", 65535, &v)) return -1;
			o->queue = (uint32_t)v; have_q = 1; break;
		case 'd':
			if (parse_u64(optarg, "delay-us", 3600ULL * 1000000, &o->delay_us)) return -1;
			have_d = 1; break;
		case 'j':
			if (parse_u64(optarg, "jitter-us", 3600ULL * 1000000, &o->jitter_us)) return -1;
			break;
		case 's':
			if (parse_u64(optarg, "seed", UINT64_MAX, &o->seed)) return -1;
			break;
		case 'm':
			if (parse_u64(optarg, "maxlen", 1u << 24, &v) || v == 0) return -1;
			o->maxlen = (uint32_t)v; break;
		case 'o': o->stats = optarg; break;
		case 'C': o->control = optarg; break;
		case 'r':
			if (parse_u64(optarg, "rcvbuf", INT_MAX, &o->rcvbuf)) return -1;
			break;
		case 'p':
			if (parse_u64(optarg, "rt-prio", 99, &v)) return -1;
			o->rt_prio = (int)v; break;
		case 'R':
			if (parse_u64(optarg, "rate-bps", 1000ULL * 1000 * 1000 * 1000, &o->rate_bps)) return -1;
			break;
		case 'S':
			if (parse_u64(optarg, "slot-us", 1000000, &o->slot_us)) return -1;
			break;
		case 'L':
			if (parse_u64(optarg, "limit-bytes", 1ULL << 40, &o->limit_bytes)) return -1;
			break;
		case 'F': o->trace = optarg; break;
		case 'O':
			if (parse_u64(optarg, "trace-offset-ms", UINT32_MAX, &o->trace_offset_ms)) return -1;
			break;
		case 'P':
			if (parse_u64(optarg, "limit-packets", UINT32_MAX, &o->limit_packets)) return -1;
			break;
		case 'B':
			if (parse_min_batch(optarg, o)) return -1;
			break;
		case 'T':
			if (parse_timer(optarg, o) < 0) return -1;
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind != argc || !have_q || !have_d) {
		usage(stderr);
		return -1;
	}
	if (o->trace && o->rate_bps) {
		fprintf(stderr, "mptcplab-delayline: --trace and --rate-bps exclude each other (the trace is the rate)\n");
		return -1;
	}
	if (!o->trace && (o->trace_offset_ms || o->limit_packets)) {
		fprintf(stderr, "mptcplab-delayline: --trace-offset-ms and --limit-packets need --trace\n");
		return -1;
	}
	return 0;
}

/* At most one line per second for errors that can repeat at packet rate. */
static int may_log(struct ctx *c, uint64_t now)
{
	if (now - c->last_err_log_ns < 1000000000ULL && c->last_err_log_ns)
		return 0;
	c->last_err_log_ns = now;
	return 1;
}

static int send_verdict(struct ctx *c, int type, uint32_t id, int verdict)
{
	char buf[MSG_BUFSZ];
	struct nlmsghdr *nlh = nfq_nlmsg_put(buf, type, c->o.queue);
	nfq_nlmsg_verdict_put(nlh, (int)id, verdict);
	ssize_t r;
	do
		r = mnl_socket_sendto(c->nl, nlh, nlh->nlmsg_len);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		/* held packets would stall forever: die, so the supervisor fails the run */
		fprintf(stderr, "mptcplab-delayline q%u: sending verdict failed: %s\n", c->o.queue,
			strerror(errno));
		return -1;
	}
	return 0;
}

static void handle_error_msg(struct ctx *c, const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	if (c->wait_seq && nlh->nlmsg_seq == c->wait_seq) {
		c->ack_done = 1;
		c->ack_err = e->error;
		return;
	}
	if (e->error == 0)
		return;
	c->verdict_errors++;
	if (may_log(c, mono_ns()))
		fprintf(stderr, "mptcplab-delayline q%u: kernel rejected a verdict: %s (total %" PRIu64 ")\n",
			c->o.queue, strerror(-e->error), c->verdict_errors);
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The packet's arrival on our monotonic clock: the kernel's receive timestamp
 * when present and plausible, else now (the time we read it). */
static uint64_t arrival_time(struct ctx *c, struct nlattr *ts_attr, uint64_t now)
{
	if (ts_attr && mnl_attr_get_payload_len(ts_attr) >= sizeof(struct nfqnl_msg_packet_timestamp)) {
		const struct nfqnl_msg_packet_timestamp *t = mnl_attr_get_payload(ts_attr);
		int64_t real = (int64_t)be64toh(t->sec) * 1000000000LL + (int64_t)be64toh(t->usec) * 1000LL;
		int64_t mono = real - c->real_minus_mono;
		/* a stamp up to 1 ms "in the future" is clock-read jitter: clamp it */
		if (mono <= (int64_t)now + 1000000 && mono >= (int64_t)now - (int64_t)TS_MAX_AGE_NS) {
			c->arrival_kernel_ts++;
			c->lazy = 1;
			return (uint64_t)mono < now ? (uint64_t)mono : now;
		}
	}
	c->arrival_read_time++;
	c->lazy = 0; /* no usable stamp: read every arrival as it comes */
	return now;
}

static void handle_packet(struct ctx *c, const struct nlmsghdr *nlh, uint64_t now)
{
	struct nlattr *attr[NFQA_MAX + 1];
	memset(attr, 0, sizeof(attr));
	if (nfq_nlmsg_parse(nlh, attr) < 0 || !attr[NFQA_PACKET_HDR]) {
		c->bad_msgs++;
		return;
	}
	const struct nfqnl_msg_packet_hdr *ph = mnl_attr_get_payload(attr[NFQA_PACKET_HDR]);
	uint32_t id = ntohl(ph->packet_id);
	uint32_t len = 0;
	/* with a short copy range the kernel sends the real length as CAP_LEN */
	if (attr[NFQA_CAP_LEN])
		len = ntohl(mnl_attr_get_u32(attr[NFQA_CAP_LEN]));
	else if (attr[NFQA_PAYLOAD])
		len = mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]);
	c->packets++;
	c->bytes += len;
	uint64_t arrival = arrival_time(c, attr[NFQA_TIMESTAMP], now);
	if (c->lazy)
		dl_hist_add(c->deliv, now - arrival);
	if (arrival + c->o.delay_us * 1000 <= now)
		c->due_on_read++;
	/* the rate stage counts wire bytes, as tbf does on an Ethernet device; the
	 * trace stage counts what mm-link counts: the IP packet and tun's 4 bytes */
	int pushed = dl_sched_push(&c->sched, id, len + (c->sched.trace ? DL_TRACE_PKT_OVERHEAD : ETH_HDR_LEN), arrival);
	if (pushed == -2) {
		/* the link's own queue is full: a drop the link model configured */
		send_verdict(c, NFQNL_MSG_VERDICT, id, NF_DROP);
	} else if (pushed < 0) {
		/* cannot hold it, so it must not pass: drop (counted) */
		c->ring_full_drops++;
		send_verdict(c, NFQNL_MSG_VERDICT, id, NF_DROP);
	}
}

static void handle_buf(struct ctx *c, const char *buf, size_t len, uint64_t now)
{
	int rem = (int)len;
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
	for (; mnl_nlmsg_ok(nlh, rem); nlh = mnl_nlmsg_next(nlh, &rem)) {
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			handle_error_msg(c, nlh);
		} else if (NFNL_SUBSYS_ID(nlh->nlmsg_type) == NFNL_SUBSYS_QUEUE &&
			   NFNL_MSG_TYPE(nlh->nlmsg_type) == NFQNL_MSG_PACKET) {
			handle_packet(c, nlh, now);
		}
	}
}

static void note_enobufs(struct ctx *c, uint64_t now)
{
	c->enobufs++;
	if (may_log(c, now))
		fprintf(stderr,
			"mptcplab-delayline q%u: ENOBUFS: netlink receive buffer overflowed, the kernel "
			"dropped queued packets (%" PRIu64 " overflows so far); the link is lossy now\n",
			c->o.queue, c->enobufs);
}

/* Reads every message waiting (bounded, so due packets are not starved). */
static int drain(struct ctx *c)
{
	c->more_pending = 1;
	for (int round = 0; round < RX_ROUNDS; round++) {
		int n = recvmmsg(c->fd, c->msgs, RX_BATCH, MSG_DONTWAIT, NULL);
		uint64_t now = mono_ns();
		c->real_minus_mono = (int64_t)(real_ns() - now);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->more_pending = 0;
				return 0;
			}
			if (errno == EINTR)
				return 0;
			if (errno == ENOBUFS) {
				note_enobufs(c, now);
				continue;
			}
			fprintf(stderr, "mptcplab-delayline q%u: recvmmsg: %s\n", c->o.queue, strerror(errno));
			return -1;
		}
		for (int i = 0; i < n; i++) {
			if (c->msgs[i].msg_hdr.msg_flags & MSG_TRUNC)
				c->truncated++;
			handle_buf(c, c->bufs[i], c->msgs[i].msg_len, now);
		}
		if (n < RX_BATCH) {
			c->more_pending = 0;
			return 0;
		}
	}
	return 0;
}

static int release_due(struct ctx *c, uint64_t now)
{
	struct dl_entry e;
	uint32_t last = 0, n = 0;
	/* --slot-us holds for every wake-up, not only the timer's: an arrival
	 * that wakes the loop inside the slot releases nothing yet */
	if (c->o.slot_us && c->last_release_ns && now < c->last_release_ns + c->o.slot_us * 1000)
		return 0;
	while (dl_sched_pop_due(&c->sched, now, &e)) {
		dl_hist_add(c->hist, now - e.release_ns);
		last = e.id;
		n++;
		c->released++;
	}
	if (!n)
		return 0;
	c->last_release_ns = now;
	/* FIFO release == id order, so one batch verdict covers every due packet.
	 * Thread CPU time is a system call (no vDSO for CLOCK_THREAD_CPUTIME_ID,
	 * and it takes the runqueue lock): measured 1% of all samples at
	 * 400 Mbit/s when read around every verdict, so the off-CPU diagnosis
	 * looks at big batches only, the ones that follow a stall. */
	int big = n >= c->o.offcpu_min_batch;
	uint64_t cpu0 = big ? thread_cpu_ns() : 0, t0 = mono_ns();
	int r = send_verdict(c, NFQNL_MSG_VERDICT_BATCH, last, NF_ACCEPT);
	uint64_t t1 = mono_ns(), took = t1 - now;
	struct dl_stall st = {.at_ns = now, .dur_ns = took, .off_ns = -1, .batch = n, .kind = 'v'};
	if (big) {
		uint64_t cpu = thread_cpu_ns() - cpu0, off = t1 - t0 > cpu ? t1 - t0 - cpu : 0;
		c->verdict_offcpu_ns += off;
		if (off > c->verdict_offcpu_max_ns)
			c->verdict_offcpu_max_ns = off;
		st.off_ns = (int64_t)off;
	}
	dl_worst_add(&c->worst, &st);
	c->verdict_calls++;
	c->verdict_ns += took;
	if (took > c->verdict_max_ns)
		c->verdict_max_ns = took;
	if (n > c->max_batch)
		c->max_batch = n;
	return r;
}

/* Sends a config request with NLM_F_ACK and waits for its ACK; packets that
 * arrive meanwhile are queued normally. Returns 0 or a negative errno. */
static int cfg_request(struct ctx *c, struct nlmsghdr *nlh)
{
	static char rx[MSG_BUFSZ];
	nlh->nlmsg_flags |= NLM_F_ACK;
	nlh->nlmsg_seq = ++c->seq;
	c->wait_seq = nlh->nlmsg_seq;
	c->ack_done = 0;
	c->ack_err = 0;
	if (mnl_socket_sendto(c->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	while (!c->ack_done) {
		ssize_t n = recv(c->fd, rx, sizeof(rx), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				note_enobufs(c, mono_ns());
				continue;
			}
			return -errno;
		}
		uint64_t now = mono_ns();
		c->real_minus_mono = (int64_t)(real_ns() - now);
		handle_buf(c, rx, (size_t)n, now);
	}
	c->wait_seq = 0;
	return c->ack_err;
}

static int setup_queue(struct ctx *c)
{
	char buf[MSG_BUFSZ];
	struct nlmsghdr *nlh;
	int err;

	c->nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!c->nl) {
		fprintf(stderr, "mptcplab-delayline: netlink socket: %s\n", strerror(errno));
		return -1;
	}
	if (mnl_socket_bind(c->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		fprintf(stderr, "mptcplab-delayline: netlink bind: %s\n", strerror(errno));
		return -1;
	}
	c->fd = mnl_socket_get_fd(c->nl);

	/* a burst at line rate must fit while we are not scheduled */
	int sz = (int)c->o.rcvbuf;
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0) {
		fprintf(stderr, "mptcplab-delayline: SO_RCVBUFFORCE %d failed (%s), using SO_RCVBUF\n", sz,
			strerror(errno));
		setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}

	nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, c->o.queue);
	nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_BIND);
	if ((err = cfg_request(c, nlh)) < 0) {
		fprintf(stderr, "mptcplab-delayline: binding queue %u failed: %s%s\n", c->o.queue,
			strerror(-err),
			err == -EBUSY ? " (another process holds this queue number in this namespace)" :
			err == -EPERM ? " (needs CAP_NET_ADMIN)" : "");
		return -1;
	}

	nlh = nfq_nlmsg_put(buf, NFQNL_MSG_CONFIG, c->o.queue);
	/* COPY_PACKET with a 1-byte range rather than COPY_META: the kernel only
	 * reports a packet's length (NFQA_CAP_LEN) in packet-copy mode, and range 0
	 * would mean "everything". One byte crosses, the rest stays in the kernel. */
	nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, COPY_RANGE);
	nfq_nlmsg_cfg_put_qmaxlen(nlh, c->o.maxlen);
	mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(NFQA_CFG_F_GSO));
	mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_GSO));
	if ((err = cfg_request(c, nlh)) < 0) {
		fprintf(stderr, "mptcplab-delayline: configuring queue %u (copy range %d, maxlen %u, GSO) failed: %s\n",
			c->o.queue, COPY_RANGE, c->o.maxlen, strerror(-err));
		return -1;
	}
	return 0;
}

/* Kernel-side drop counters of our queue, from /proc/net/netfilter/nfnetlink_queue
 * (per network namespace): queue full, and failed delivery to us. */
static int read_kernel_drops(uint32_t queue, long long *queue_dropped, long long *user_dropped)
{
	FILE *f = fopen("/proc/net/netfilter/nfnetlink_queue", "r");
	unsigned q, portid, total, mode, range, qd, ud, idseq, one;
	int found = 0;
	if (!f)
		return -1;
	while (fscanf(f, "%u %u %u %u %u %u %u %u %u", &q, &portid, &total, &mode, &range, &qd, &ud,
		      &idseq, &one) == 9) {
		if (q == queue) {
			*queue_dropped = qd;
			*user_dropped = ud;
			found = 1;
			break;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

/* a path as a JSON string, escaped as far as paths need */
static void json_path(FILE *f, const char *path)
{
	fputc('"', f);
	for (const char *p = path; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', f);
		fputc((unsigned char)*p < 0x20 ? '?' : *p, f);
	}
	fputc('"', f);
}

static void write_stats(struct ctx *c)
{
	long long qd = -1, ud = -1;
	char qds[32] = "null", uds[32] = "null";
	if (read_kernel_drops(c->o.queue, &qd, &ud) == 0) {
		snprintf(qds, sizeof(qds), "%lld", qd);
		snprintf(uds, sizeof(uds), "%lld", ud);
	}
	double p50 = dl_hist_percentile_us(c->hist, 50), p99 = dl_hist_percentile_us(c->hist, 99);
	double mx = (double)c->hist->max_ns / 1000.0;

	fprintf(stderr,
		"mptcplab-delayline q%u: packets=%" PRIu64 " max_held=%u enobufs=%" PRIu64
		" queue_full_drops=%s lateness_us p50=%.0f p99=%.0f max=%.1f\n",
		c->o.queue, c->packets, c->sched.max_held, c->enobufs, qds, p50, p99, mx);
	if (!c->o.stats)
		return;

	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s.tmp", c->o.stats);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "mptcplab-delayline: cannot write %s: %s\n", tmp, strerror(errno));
		return;
	}
	fprintf(f,
		"{\"queue\": %u, \"delay_us\": %" PRIu64 ", \"jitter_us\": %" PRIu64 ", \"seed\": %" PRIu64
		", \"maxlen\": %u,\n"
		" \"packets\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"released\": %" PRIu64
		", \"held_at_exit\": %u, \"max_held\": %u,\n"
		" \"enobufs\": %" PRIu64 ", \"queue_full_drops\": %s, \"user_drops\": %s"
		", \"ring_full_drops\": %" PRIu64 ", \"verdict_errors\": %" PRIu64 ", \"truncated\": %" PRIu64
		", \"bad_msgs\": %" PRIu64 ",\n"
		" \"arrival_kernel_ts\": %" PRIu64 ", \"arrival_read_time\": %" PRIu64 ",\n"
		" \"lateness_us\": {\"p50\": %.0f, \"p99\": %.0f, \"max\": %.1f, \"mean\": %.1f, \"n\": %" PRIu64 "},\n"
		" \"delivery_us\": {\"p50\": %.0f, \"p99\": %.0f, \"max\": %.1f, \"mean\": %.1f, \"n\": %" PRIu64 "},\n"
		" \"due_on_read\": %" PRIu64 ", \"wakeups\": %" PRIu64 ", \"verdict_calls\": %" PRIu64
		", \"verdict_mean_us\": %.1f, \"verdict_max_us\": %.1f, \"max_batch\": %u,\n"
		" \"rate_bps\": %" PRIu64 ", \"limit_bytes\": %" PRIu64 ", \"rate_drops\": %" PRIu64
		", \"slot_us\": %" PRIu64 ",\n"
		" \"verdict_offcpu_ms\": %.1f, \"verdict_offcpu_max_us\": %.1f,\n",
		c->o.queue, c->o.delay_us, c->o.jitter_us, c->o.seed, c->o.maxlen, c->packets, c->bytes,
		c->released, c->sched.count, c->sched.max_held, c->enobufs, qds, uds, c->ring_full_drops,
		c->verdict_errors, c->truncated, c->bad_msgs, c->arrival_kernel_ts, c->arrival_read_time, p50, p99,
		mx, dl_hist_mean_us(c->hist), c->hist->n, dl_hist_percentile_us(c->deliv, 50),
		dl_hist_percentile_us(c->deliv, 99), (double)c->deliv->max_ns / 1000.0, dl_hist_mean_us(c->deliv),
		c->deliv->n, c->due_on_read, c->wakeups, c->verdict_calls,
		c->verdict_calls ? (double)c->verdict_ns / 1000.0 / (double)c->verdict_calls : 0.0,
		(double)c->verdict_max_ns / 1000.0, c->max_batch, c->o.rate_bps, c->o.limit_bytes,
		c->sched.rate_drops, c->o.slot_us, (double)c->verdict_offcpu_ns / 1e6,
		(double)c->verdict_offcpu_max_ns / 1000.0);
	struct dl_trace *t = c->sched.trace;
	if (t) {
		dl_trace_settle(t, mono_ns());
		fprintf(f, " \"trace\": {\"file\": ");
		json_path(f, c->o.trace);
		fprintf(f, ", \"switches\": %" PRIu64 ", \"current_file\": ", t->switches);
		json_path(f, c->trace_now[0] ? c->trace_now : c->o.trace);
		fprintf(f,
			", \"lines\": %u, \"period_ms\": %" PRIu64 ", \"offset_ms\": %" PRIu64
			", \"start_unix_ns\": %" PRIu64 ", \"start_mono_ns\": %" PRIu64 ",\n"
			"  \"limit_bytes\": %" PRIu64 ", \"limit_packets\": %" PRIu64 ", \"opportunities_used\": %" PRIu64
			", \"opportunities_wasted\": %" PRIu64 ",\n  \"opportunities_wasted_between_drops\": %" PRIu64
			", \"wasted_bytes\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"drops\": %" PRIu64
			", \"drop_bytes\": %" PRIu64 "},\n",
			t->n, t->period_ns / 1000000, c->o.trace_offset_ms, c->trace_start_unix_ns, t->start_ns,
			t->limit_bytes, t->limit_packets, t->opp_used, t->opp_wasted,
			t->wasted_at_last_drop - t->wasted_at_first_drop, t->wasted_bytes, t->bytes, t->drops, t->drop_bytes);
	} else {
		fprintf(f, " \"trace\": null,\n");
	}
	fprintf(f,
		" \"offcpu_min_batch\": %u, \"timer\": \"%s\",\n"
		" \"wake_late_us\": {\"p50\": %.0f, \"p99\": %.0f, \"max\": %.1f, \"mean\": %.1f, \"n\": %" PRIu64 "},\n"
		" \"stalls\": [",
		c->o.offcpu_min_batch, c->o.rel_timer ? "rel" : "abs", dl_hist_percentile_us(c->wake, 50),
		dl_hist_percentile_us(c->wake, 99), (double)c->wake->max_ns / 1000.0, dl_hist_mean_us(c->wake),
		c->wake->n);
	for (uint32_t i = 0; i < c->worst.n; i++) {
		const struct dl_stall *s = &c->worst.s[i];
		char off[32] = "null";
		if (s->off_ns >= 0)
			snprintf(off, sizeof(off), "%.1f", (double)s->off_ns / 1000.0);
		fprintf(f, "%s{\"at_ms\": %.3f, \"kind\": \"%s\", \"us\": %.1f, \"offcpu_us\": %s, \"batch\": %u}",
			i ? ",\n  " : "\n  ", (double)s->at_ns / 1e6, s->kind == 'v' ? "verdict" : "wake",
			(double)s->dur_ns / 1000.0, off, s->batch);
	}
	fprintf(f, "]}\n");
	if (fclose(f) != 0 || rename(tmp, c->o.stats) != 0) {
		int e = errno;
		unlink(tmp); /* a full file system: no half-written .tmp left beside the results */
		fprintf(stderr, "mptcplab-delayline: cannot write %s: %s\n", c->o.stats, strerror(e));
	}
}

/* Holding any socket with SO_TIMESTAMP makes the kernel stamp every received
 * skb at netif_rx (a global switch, as tcpdump or ping also flip it); nfqueue
 * then passes the stamp to us as NFQA_TIMESTAMP. */
static void enable_rx_timestamps(struct ctx *c)
{
	int one = 1;
	c->ts_sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (c->ts_sock < 0 || setsockopt(c->ts_sock, SOL_SOCKET, SO_TIMESTAMP, &one, sizeof(one)) < 0)
		fprintf(stderr, "mptcplab-delayline: cannot enable receive timestamps (%s); "
			"arrival times will be read times\n", strerror(errno));
}

static void setup_timing(struct ctx *c)
{
	/* default timer slack (50 us) would add itself to every release */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (c->o.rt_prio > 0) {
		struct sched_param sp = {.sched_priority = c->o.rt_prio};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			fprintf(stderr, "mptcplab-delayline: SCHED_FIFO %d: %s (continuing)\n", c->o.rt_prio,
				strerror(errno));
		mlockall(MCL_CURRENT | MCL_FUTURE);
	}
}

/* SIGUSR1 with --control: new delay and jitter for the packets read from now on */
static void apply_control(struct ctx *c)
{
	long pid;
	uint64_t d, j, off = 0;
	static char trace[DL_CONTROL_PATH_MAX];
	if (dl_control_read(c->o.control, &pid, &d, &j, trace, &off) < 0) {
		fprintf(stderr, "mptcplab-delayline q%u: unreadable control file %s\n", c->o.queue, c->o.control);
		return;
	}
	c->o.delay_us = d;
	c->o.jitter_us = j;
	c->sched.delay_ns = d * 1000;
	c->sched.jitter_ns = j * 1000;
	if (!trace[0])
		return;
	/* a trace switch: now, for the packets read from now on (the backlog keeps its departures) */
	uint32_t *ms = NULL, n = 0;
	char err[512];
	if (!c->sched.trace) {
		fprintf(stderr, "mptcplab-delayline q%u: trace switch refused: this line has no trace stage\n", c->o.queue);
	} else if (dl_trace_load(trace, &ms, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "mptcplab-delayline q%u: trace switch refused: %s\n", c->o.queue, err);
	} else if (dl_sched_switch_trace(&c->sched, ms, n, off, mono_ns()) < 0) {
		fprintf(stderr, "mptcplab-delayline q%u: trace switch to %s failed (memory)\n", c->o.queue, trace);
	} else {
		snprintf(c->trace_now, sizeof(c->trace_now), "%s", trace);
	}
	free(ms);
}

int main(int argc, char **argv)
{
	static struct ctx c;
	if (parse_opts(argc, argv, &c.o) < 0)
		return 2;

	c.hist = malloc(sizeof(*c.hist));
	c.deliv = malloc(sizeof(*c.deliv));
	c.wake = malloc(sizeof(*c.wake));
	c.bufs = malloc((size_t)RX_BATCH * RX_BUFSZ);
	if (!c.hist || !c.deliv || !c.wake || !c.bufs ||
	    dl_sched_init(&c.sched, c.o.maxlen, c.o.delay_us * 1000, c.o.jitter_us * 1000, c.o.seed) < 0) {
		fprintf(stderr, "mptcplab-delayline: out of memory\n");
		return 1;
	}
	if (c.o.rate_bps)
		dl_sched_set_rate(&c.sched, c.o.rate_bps, c.o.limit_bytes);
	uint32_t *trace_ms = NULL, trace_n = 0;
	if (c.o.trace) {
		char err[512];
		if (dl_trace_load(c.o.trace, &trace_ms, &trace_n, err, sizeof(err)) < 0) {
			fprintf(stderr, "mptcplab-delayline: --trace: %s\n", err);
			return 2;
		}
	}
	if (trace_ms) {
		/* the trace starts now, before the queue is bound: no packet passes without it */
		/* the same instant on both clocks: the realtime reading between two monotonic ones */
		uint64_t m0 = mono_ns(), real = real_ns(), m1 = mono_ns(), now = m0 + (m1 - m0) / 2;
		c.trace_start_unix_ns = real;
		if (dl_sched_set_trace(&c.sched, trace_ms, trace_n, c.o.trace_offset_ms, now, c.o.limit_bytes,
				       c.o.limit_packets) < 0) {
			fprintf(stderr, "mptcplab-delayline: out of memory for the trace\n");
			return 1;
		}
		free(trace_ms);
	}
	dl_hist_init(c.hist);
	dl_hist_init(c.deliv);
	dl_hist_init(c.wake);
	for (int i = 0; i < RX_BATCH; i++) {
		c.iov[i].iov_base = c.bufs[i];
		c.iov[i].iov_len = RX_BUFSZ;
		memset(&c.msgs[i], 0, sizeof(c.msgs[i]));
		c.msgs[i].msg_hdr.msg_iov = &c.iov[i];
		c.msgs[i].msg_hdr.msg_iovlen = 1;
	}

	/* signals stay blocked except inside ppoll, so a stop request can never be
	 * lost between the flag check and the sleep */
	sigset_t block, waitmask;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGUSR1);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_reload;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* a delay line whose supervisor died has nobody to report to: stop (the
	 * handler writes the stats; the link then drops, fail closed). The getppid
	 * check covers a parent that died before prctl. */
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid() != parent)
		g_stop = 1;

	setup_timing(&c);
	enable_rx_timestamps(&c);
	if (setup_queue(&c) < 0)
		return 1;
	if (c.o.control && dl_control_write(c.o.control, (long)getpid(), c.o.delay_us, c.o.jitter_us, NULL, 0) < 0) {
		fprintf(stderr, "mptcplab-delayline: cannot write --control %s: %s\n", c.o.control, strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);

	int rc = 0;
	while (!g_stop) {
		/* parameters first: before releases and the next wait are computed */
		if (g_reload) {
			g_reload = 0;
			apply_control(&c);
		}
		uint64_t now = mono_ns();
		if (release_due(&c, now) < 0) {
			rc = 3;
			break;
		}
		int64_t wait = dl_sched_wait_ns(&c.sched, now);
		/* --slot-us: no release sooner than Q after the previous one. Each
		 * sleep arms a timer and each wake-up takes an interrupt; in a VM
		 * both exit to the hypervisor (measured: ppoll plus the timer
		 * interrupt were ~45% of the delay line's CPU at 400 Mbit/s, where
		 * the rate stage spaces releases 30 us apart). Packets due in
		 * between wait for the slot: up to Q of lateness, counted as such. */
		if (wait >= 0 && c.o.slot_us) {
			int64_t floor = (int64_t)(c.last_release_ns + c.o.slot_us * 1000) - (int64_t)now;
			if (wait < floor)
				wait = floor;
		}
		/* lazy: packets held and arrivals carry kernel stamps, so sleep until
		 * the head is due without watching the socket (see the header) */
		int lazy = c.lazy && wait >= 0 && !c.more_pending;
		if (lazy && wait > (int64_t)LAZY_MAX_NS)
			wait = LAZY_MAX_NS;
		struct timespec ts, *tsp = NULL;
		/* what we sleep until: the head's release (or the slot's end) */
		uint64_t target = wait >= 0 ? now + (uint64_t)wait : 0;
		uint64_t expires = 0; /* when the sleep's timeout runs out */
		if (wait >= 0) {
			/* ppoll takes a relative timeout: from now, not from before the
			 * release_due above, whose verdict may have taken long */
			uint64_t t = mono_ns();
			if (!c.o.rel_timer)
				wait = target > t ? (int64_t)(target - t) : 0;
			expires = t + (uint64_t)wait;
			ts.tv_sec = wait / 1000000000LL;
			ts.tv_nsec = wait % 1000000000LL;
			tsp = &ts;
		}
		struct pollfd pfd = {.fd = c.fd, .events = POLLIN};
		int r = ppoll(lazy ? NULL : &pfd, lazy ? 0 : 1, tsp, &waitmask);
		c.wakeups++;
		uint64_t woke = mono_ns();
		if (r == 0 && tsp) {
			/* a timed sleep that ran out: how late after its timeout did it get
			 * the CPU back (the scheduler's part, not a verdict's before it) */
			uint64_t over = woke > expires ? woke - expires : 0;
			dl_hist_add(c.wake, over);
			struct dl_stall st = {.at_ns = expires, .dur_ns = over, .off_ns = -1, .batch = 0, .kind = 'w'};
			dl_worst_add(&c.worst, &st);
		}
		if (lazy && r == 0)
			r = 1; /* woke for the head: read what arrived meanwhile */
		if (r < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "mptcplab-delayline q%u: ppoll: %s\n", c.o.queue, strerror(errno));
			rc = 3;
			break;
		}
		/* due packets first: reading newcomers is less urgent, none of them
		 * can be due before the packets already held */
		if (r > 0 && (release_due(&c, woke) < 0 || drain(&c) < 0)) {
			rc = 3;
			break;
		}
	}
	/* held packets are dropped by the kernel when the socket closes: fail closed */
	write_stats(&c);
	if (c.enobufs)
		fprintf(stderr, "mptcplab-delayline q%u: WARNING: %" PRIu64
			" netlink overflows (ENOBUFS) during the run; packets were lost\n", c.o.queue, c.enobufs);
	mnl_socket_close(c.nl);
	if (c.ts_sock >= 0)
		close(c.ts_sock);
	dl_sched_free(&c.sched);
	return rc;
}
