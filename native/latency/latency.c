/*
 * mptcplab-latency: application-level latency of timestamped blocks over an
 * MPTCP (or TCP) connection, as the application sees it.
 *
 * Why this is hand-written: the NSDI 2012 MPTCP paper (Fig 7) and the Kato
 * send-buffer papers measure what an application experiences: the delay of
 * each block it writes, with its socket buffers set (and so locked) by the
 * application, and the time it spends blocked because the send buffer is
 * full. iperf3 reports neither per-block delays nor blocked time, and cannot
 * read MPTCP_INFO. The job is small: one socket each way, a header per block.
 *
 * The client (sender) writes blocks of --block bytes (default 8192), each
 * starting with a 32-byte header (latrec.h): sequence number, the time the
 * schedule wanted it written and the time its first send() was called
 * (CLOCK_REALTIME: both ends run on one host, in different network
 * namespaces, so they share the clock). Back to back (bulk) or paced at
 * --rate-bps / --rate-blocks. Sends are non-blocking with poll() for space,
 * so the time spent waiting for send-buffer space is measured per block
 * (the application's view of sk_stream_wait_memory).
 *
 * The server (receiver) accepts one connection, reassembles blocks from
 * whatever read() returns and records, per block, when the read that
 * completed it returned. Records go to binary files (latrec.h) through a
 * large stdio buffer: 32-40 bytes per block is nothing at 1 Gbit/s.
 *
 * Both ends set SO_SNDBUF / SO_RCVBUF only when asked (setting one locks it:
 * the kernel then stops autotuning it; it also stores twice the requested
 * value, capped by net.core.[wr]mem_max unless --force-buffers uses the
 * *BUFFORCE variants), read the effective values back after setsockopt,
 * after the connection is up and at the end, and write a JSON summary with
 * MPTCP_INFO, per-subflow TCP_INFO (MPTCP_TCPINFO + MPTCP_SUBFLOW_ADDRS) or
 * the plain TCP_INFO for TCP and for an MPTCP socket that fell back to TCP.
 *
 * Exit status: 0 done (also when stopped by SIGINT/SIGTERM: the JSON then
 * says "interrupted": true), 1 runtime error, 2 bad arguments; errors are one
 * line on stderr and, once the JSON path is known, in the JSON's "error".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* the kernel's struct tcp_info (glibc's netinet/tcp.h lags behind) */
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <time.h>
#include <unistd.h>

#include <linux/mptcp.h>

#include "latrec.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef SOL_MPTCP
#define SOL_MPTCP 284
#endif
#ifndef TCP_IS_MPTCP
#define TCP_IS_MPTCP 43 /* SOL_TCP: 1 on an MPTCP socket that has not fallen back to TCP */
#endif

#define RX_BUF (1024 * 1024)
#define IO_BUF (1024 * 1024)
#define MAX_SUBFLOWS 16
#define DRAIN_MAX_NS (5 * 1000000000LL)

/*
 * struct mptcp_info as kernels >= 6.10 fill it. The build host's
 * linux/mptcp.h may be older (Debian 12: 6.1, up to mptcpi_csum_enabled);
 * the kernel copies min(our size, its size) and returns that length, so the
 * fields past the returned length are reported as absent, never as zero.
 */
struct lat_mptcp_info {
	uint8_t subflows;
	uint8_t add_addr_signal;
	uint8_t add_addr_accepted;
	uint8_t subflows_max;
	uint8_t add_addr_signal_max;
	uint8_t add_addr_accepted_max;
	uint32_t flags;
	uint32_t token;
	uint64_t write_seq;
	uint64_t snd_una;
	uint64_t rcv_nxt;
	uint8_t local_addr_used;
	uint8_t local_addr_max;
	uint8_t csum_enabled;
	uint32_t retransmits;     /* 6.5 */
	uint64_t bytes_retrans;   /* 6.5 */
	uint64_t bytes_sent;      /* 6.5 */
	uint64_t bytes_received;  /* 6.5 */
	uint64_t bytes_acked;     /* 6.5 */
	uint8_t subflows_total;   /* 6.10 */
	uint8_t reserved[3];
	uint32_t last_data_sent;  /* 6.10 */
	uint32_t last_data_recv;
	uint32_t last_ack_recv;
};

enum role { ROLE_NONE, ROLE_SERVER, ROLE_CLIENT };

struct opts {
	enum role role;
	const char *addr;       /* server: listen address; client: server address */
	const char *port;
	const char *bind_addr;  /* client: source address */
	int tcp;                /* plain TCP instead of IPPROTO_MPTCP */
	const char *cc;         /* TCP_CONGESTION per socket (NULL: the namespace's default) */
	long long sndbuf, rcvbuf; /* -1: leave to autotuning */
	int force_buffers;
	uint32_t block;
	double duration_s;      /* client: 0 = unlimited (needs --blocks/--bytes) */
	uint64_t max_blocks;    /* client: 0 = unlimited */
	double rate_blocks;     /* client: 0 = bulk */
	const char *json_path;
	const char *records_path;
	double connect_timeout_s;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* ---------------------------------------------------------------- errors */

static char err_msg[512];
static struct opts *g_opts;
static void write_error_json(void);

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "mptcplab-latency: %s\n", err_msg);
	write_error_json();
	exit(1);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---------------------------------------------------------------- JSON */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void write_error_json(void)
{
	if (!g_opts || !g_opts->json_path)
		return;
	FILE *f = fopen(g_opts->json_path, "w");
	if (!f)
		return;
	fprintf(f, "{\"tool\": \"mptcplab-latency\", \"version\": 1, \"role\": \"%s\", \"error\": ",
		g_opts->role == ROLE_SERVER ? "server" : "client");
	json_str(f, err_msg);
	fprintf(f, "}\n");
	fclose(f);
}

/* ---------------------------------------------------------------- sockets */

struct bufs {
	long long requested;    /* -1: autotuned */
	int after_set;          /* SO_*BUF right after setsockopt (or at creation) */
	int established;        /* once connected / accepted */
	int at_end;
};

struct sockinfo {
	struct bufs snd, rcv;
	int is_mptcp;           /* TCP_IS_MPTCP: -1 unknown */
	char local[80], remote[80];
};

static int get_int_opt(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);
	if (getsockopt(fd, level, name, &v, &len) != 0)
		return -1;
	return v;
}

static void set_buffers(int fd, const struct opts *o, struct sockinfo *si)
{
	si->snd.requested = o->sndbuf;
	si->rcv.requested = o->rcvbuf;
	if (o->sndbuf >= 0) {
		int v = (int)o->sndbuf;
		int name = o->force_buffers ? SO_SNDBUFFORCE : SO_SNDBUF;
		if (setsockopt(fd, SOL_SOCKET, name, &v, sizeof(v)) != 0)
			die("setsockopt(%s, %d): %s", o->force_buffers ? "SO_SNDBUFFORCE" : "SO_SNDBUF", v,
			    strerror(errno));
	}
	if (o->rcvbuf >= 0) {
		int v = (int)o->rcvbuf;
		int name = o->force_buffers ? SO_RCVBUFFORCE : SO_RCVBUF;
		if (setsockopt(fd, SOL_SOCKET, name, &v, sizeof(v)) != 0)
			die("setsockopt(%s, %d): %s", o->force_buffers ? "SO_RCVBUFFORCE" : "SO_RCVBUF", v,
			    strerror(errno));
	}
	si->snd.after_set = get_int_opt(fd, SOL_SOCKET, SO_SNDBUF);
	si->rcv.after_set = get_int_opt(fd, SOL_SOCKET, SO_RCVBUF);
}

static void sockaddr_text(const struct sockaddr *sa, char *out, size_t n)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		port = ntohs(s->sin_port);
		snprintf(out, n, "%s:%u", host, port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		port = ntohs(s->sin6_port);
		snprintf(out, n, "[%s]:%u", host, port);
	} else {
		snprintf(out, n, "?");
	}
}

static void fill_names(int fd, struct sockinfo *si)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		sockaddr_text((struct sockaddr *)&ss, si->local, sizeof(si->local));
	len = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0)
		sockaddr_text((struct sockaddr *)&ss, si->remote, sizeof(si->remote));
}

static struct addrinfo *resolve(const char *host, const char *port, int passive)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		die("address %s port %s: %s", host ? host : "*", port, gai_strerror(rc));
	return res;
}

static int new_socket(int family, const struct opts *o)
{
	int fd = socket(family, SOCK_STREAM, o->tcp ? IPPROTO_TCP : IPPROTO_MPTCP);
	if (fd < 0)
		die("socket(%s): %s%s", o->tcp ? "TCP" : "MPTCP", strerror(errno),
		    o->tcp ? "" : " (is net.mptcp.enabled 1 in this namespace?)");
	/* per socket, before connect/listen: an MPTCP socket applies it to every subflow.
	 * A namespace cannot pick a default outside the host's allowed list, a socket
	 * of a privileged process can (as iperf3 -C does). */
	if (o->cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, o->cc, (socklen_t)strlen(o->cc)) != 0)
		die("setsockopt(TCP_CONGESTION, %s): %s", o->cc, strerror(errno));
	return fd;
}

/* ---------------------------------------------------------------- info */

#define HAS(len, type, field) ((size_t)(len) >= offsetof(type, field) + sizeof(((type *)0)->field))

static void json_tcp_info(FILE *f, const struct tcp_info *t, size_t len)
{
	/* a field the kernel did not fill (shorter struct) is left out */
	fprintf(f, "{\"state\": %u, \"ca_state\": %u", t->tcpi_state, t->tcpi_ca_state);
#define U(field, name) \
	if (HAS(len, struct tcp_info, field)) \
		fprintf(f, ", \"" name "\": %" PRIu64, (uint64_t)t->field)
	U(tcpi_rto, "rto_us");
	U(tcpi_snd_mss, "snd_mss");
	U(tcpi_rcv_mss, "rcv_mss");
	U(tcpi_rtt, "rtt_us");
	U(tcpi_rttvar, "rttvar_us");
	U(tcpi_min_rtt, "min_rtt_us");
	U(tcpi_snd_ssthresh, "snd_ssthresh");
	U(tcpi_snd_cwnd, "snd_cwnd");
	U(tcpi_total_retrans, "total_retrans");
	U(tcpi_pacing_rate, "pacing_rate_Bps");
	U(tcpi_delivery_rate, "delivery_rate_Bps");
	U(tcpi_bytes_acked, "bytes_acked");
	U(tcpi_bytes_received, "bytes_received");
	U(tcpi_bytes_sent, "bytes_sent");
	U(tcpi_bytes_retrans, "bytes_retrans");
	U(tcpi_notsent_bytes, "notsent_bytes");
	U(tcpi_busy_time, "busy_time_us");
	U(tcpi_rwnd_limited, "rwnd_limited_us");
	U(tcpi_sndbuf_limited, "sndbuf_limited_us");
	U(tcpi_snd_wnd, "snd_wnd");
	U(tcpi_rcv_space, "rcv_space");
#undef U
	fputc('}', f);
}

static void json_mptcp_info(FILE *f, int fd)
{
	struct lat_mptcp_info mi;
	socklen_t len = sizeof(mi);
	memset(&mi, 0, sizeof(mi));
	if (getsockopt(fd, SOL_MPTCP, MPTCP_INFO, &mi, &len) != 0) {
		/* a socket that fell back to TCP answers EOPNOTSUPP: no MPTCP state */
		fprintf(f, "null, \"mptcp_info_error\": ");
		json_str(f, strerror(errno));
		return;
	}
	fprintf(f, "{\"len\": %u", (unsigned)len);
#define U(field) \
	if (HAS(len, struct lat_mptcp_info, field)) \
		fprintf(f, ", \"" #field "\": %" PRIu64, (uint64_t)mi.field)
	U(subflows);
	U(add_addr_signal);
	U(add_addr_accepted);
	U(subflows_max);
	U(add_addr_signal_max);
	U(add_addr_accepted_max);
	U(flags);
	U(token);
	U(write_seq);
	U(snd_una);
	U(rcv_nxt);
	U(local_addr_used);
	U(local_addr_max);
	U(csum_enabled);
	U(retransmits);
	U(bytes_retrans);
	U(bytes_sent);
	U(bytes_received);
	U(bytes_acked);
	U(subflows_total);
	U(last_data_sent);
	U(last_data_recv);
	U(last_ack_recv);
#undef U
	fputc('}', f);
}

struct sf_tcpinfo {
	struct mptcp_subflow_data d;
	struct tcp_info ti[MAX_SUBFLOWS];
};

struct sf_addrs {
	struct mptcp_subflow_data d;
	struct mptcp_subflow_addrs a[MAX_SUBFLOWS];
};

static void json_subflows(FILE *f, int fd)
{
	static struct sf_tcpinfo ti;
	static struct sf_addrs ad;
	socklen_t len = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	ti.d.size_subflow_data = sizeof(ti.d);
	ti.d.size_user = sizeof(struct tcp_info);
	if (getsockopt(fd, SOL_MPTCP, MPTCP_TCPINFO, &ti, &len) != 0) {
		fprintf(f, "null, \"subflows_error\": ");
		json_str(f, strerror(errno));
		return;
	}
	len = sizeof(ad);
	memset(&ad, 0, sizeof(ad));
	ad.d.size_subflow_data = sizeof(ad.d);
	ad.d.size_user = sizeof(struct mptcp_subflow_addrs);
	int have_addrs = getsockopt(fd, SOL_MPTCP, MPTCP_SUBFLOW_ADDRS, &ad, &len) == 0;
	unsigned n = ti.d.num_subflows < MAX_SUBFLOWS ? ti.d.num_subflows : MAX_SUBFLOWS;
	size_t each = ti.d.size_kernel < sizeof(struct tcp_info) ? ti.d.size_kernel : sizeof(struct tcp_info);
	fputc('[', f);
	for (unsigned i = 0; i < n; i++) {
		char l[80] = "", r[80] = "";
		/* both lists walk the connection's subflow list; equal counts = same order */
		if (have_addrs && ad.d.num_subflows == ti.d.num_subflows) {
			sockaddr_text(&ad.a[i].sa_local, l, sizeof(l));
			sockaddr_text(&ad.a[i].sa_remote, r, sizeof(r));
		}
		fprintf(f, "%s{\"local\": ", i ? ", " : "");
		json_str(f, l);
		fprintf(f, ", \"remote\": ");
		json_str(f, r);
		fprintf(f, ", \"tcp_info\": ");
		json_tcp_info(f, &ti.ti[i], each);
		fputc('}', f);
	}
	fputc(']', f);
}

static void json_info(FILE *f, int fd, int tcp)
{
	struct tcp_info t;
	socklen_t len = sizeof(t);
	memset(&t, 0, sizeof(t));
	fprintf(f, ",\n  \"tcp_info\": ");
	/* TCP, or an MPTCP socket that fell back (the request then reaches its TCP socket) */
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &t, &len) == 0) {
		json_tcp_info(f, &t, len);
	} else {
		fprintf(f, "null, \"tcp_info_error\": ");
		json_str(f, strerror(errno));
	}
	if (tcp)
		return;
	fprintf(f, ",\n  \"mptcp_info\": ");
	json_mptcp_info(f, fd);
	fprintf(f, ",\n  \"subflows\": ");
	json_subflows(f, fd);
}

static void json_bufs(FILE *f, const char *name, const struct bufs *b, int forced)
{
	fprintf(f, ",\n  \"%s\": {\"requested\": ", name);
	if (b->requested < 0)
		fprintf(f, "null");
	else
		fprintf(f, "%lld", b->requested);
	fprintf(f, ", \"forced\": %s, \"after_setsockopt\": %d, \"established\": %d, \"at_end\": %d}",
		forced && b->requested >= 0 ? "true" : "false", b->after_set, b->established, b->at_end);
}

static void json_cc(FILE *f, int fd)
{
	char name[32] = {0};
	socklen_t len = sizeof(name) - 1;
	fprintf(f, ",\n  \"cc\": ");
	if (fd >= 0 && getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) == 0)
		json_str(f, name);
	else
		fprintf(f, "null");
}

static void json_common(FILE *f, const struct opts *o, const struct sockinfo *si)
{
	fprintf(f, "{\"tool\": \"mptcplab-latency\", \"version\": 1, \"role\": \"%s\", \"protocol\": \"%s\"",
		o->role == ROLE_SERVER ? "server" : "client", o->tcp ? "tcp" : "mptcp");
	fprintf(f, ",\n  \"mptcp_active\": %s",
		si->is_mptcp < 0 ? "null" : si->is_mptcp ? "true" : "false");
	fprintf(f, ", \"local\": ");
	json_str(f, si->local);
	fprintf(f, ", \"remote\": ");
	json_str(f, si->remote);
	json_bufs(f, "sndbuf", &si->snd, o->force_buffers);
	json_bufs(f, "rcvbuf", &si->rcv, o->force_buffers);
}

static FILE *open_json(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		die("cannot write %s: %s", path, strerror(errno));
	return f;
}

static void close_json(FILE *f, const char *path)
{
	if (fflush(f) != 0 || ferror(f) || fclose(f) != 0)
		die("cannot write %s", path);
}

/* ---------------------------------------------------------------- records */

struct recfile {
	FILE *f;
	char *buf;
	const char *path;
};

static void rec_open(struct recfile *r, const char *path, const char *magic, uint32_t rec_len)
{
	unsigned char h[LAT_FILE_HDR_LEN];
	r->path = path;
	r->f = NULL;
	if (!path)
		return;
	r->f = fopen(path, "wb");
	if (!r->f)
		die("cannot write %s: %s", path, strerror(errno));
	r->buf = malloc(IO_BUF);
	if (!r->buf)
		die("out of memory");
	setvbuf(r->f, r->buf, _IOFBF, IO_BUF);
	lat_file_hdr(h, magic, rec_len);
	fwrite(h, 1, sizeof(h), r->f);
}

static void rec_put(struct recfile *r, const unsigned char *rec, size_t len)
{
	if (r->f && fwrite(rec, 1, len, r->f) != len)
		die("cannot write %s: %s", r->path, strerror(errno));
}

static void rec_close(struct recfile *r)
{
	if (!r->f)
		return;
	if (fflush(r->f) != 0 || fclose(r->f) != 0)
		die("cannot write %s", r->path);
	r->f = NULL;
	free(r->buf);
}

/* ---------------------------------------------------------------- server */

struct rx_ctx {
	struct recfile rec;
	int64_t t_recv;
	int64_t delay_min, delay_max;
	double delay_sum;
	int64_t first_recv, last_recv;
	uint64_t blocks;
};

static void on_block(const struct lat_hdr *h, void *p)
{
	struct rx_ctx *c = p;
	unsigned char rec[LAT_RCV_REC_LEN];
	lat_put_u64(rec, h->seq);
	lat_put_u64(rec + 8, (uint64_t)h->t_sched_ns);
	lat_put_u64(rec + 16, (uint64_t)h->t_write_ns);
	lat_put_u64(rec + 24, (uint64_t)c->t_recv);
	rec_put(&c->rec, rec, sizeof(rec));
	int64_t d = c->t_recv - h->t_write_ns;
	if (c->blocks == 0 || d < c->delay_min)
		c->delay_min = d;
	if (c->blocks == 0 || d > c->delay_max)
		c->delay_max = d;
	if (c->blocks == 0)
		c->first_recv = c->t_recv;
	c->last_recv = c->t_recv;
	c->delay_sum += (double)d;
	c->blocks++;
}

static int run_server(struct opts *o)
{
	struct sockinfo si = {.is_mptcp = -1};
	struct addrinfo *ai = resolve(o->addr, o->port, 1);
	int lfd = new_socket(ai->ai_family, o);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* buffers on the listener: the accepted socket inherits them (and the
	 * window scale offered in the SYN/ACK follows the receive buffer) */
	set_buffers(lfd, o, &si);
	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) != 0)
		die("bind %s:%s: %s", o->addr, o->port, strerror(errno));
	freeaddrinfo(ai);
	if (listen(lfd, 1) != 0)
		die("listen: %s", strerror(errno));
	printf("ready\n");
	fflush(stdout);

	struct rx_ctx c;
	memset(&c, 0, sizeof(c));
	rec_open(&c.rec, o->records_path, LAT_RCV_MAGIC, LAT_RCV_REC_LEN);

	int fd = -1;
	while (!stop_flag) {
		fd = accept(lfd, NULL, NULL);
		if (fd >= 0 || errno != EINTR)
			break;
	}
	if (fd < 0 && !stop_flag)
		die("accept: %s", strerror(errno));
	/* the listener stays open until the end: MPTCP joins (MP_JOIN SYNs to this
	 * port) are answered by it, closing it would leave the connection one subflow */

	struct lat_reasm r;
	lat_reasm_init(&r);
	uint64_t bytes = 0;
	int eof = 0;
	unsigned char *buf = malloc(RX_BUF);
	if (!buf)
		die("out of memory");
	if (fd >= 0) {
		fill_names(fd, &si);
		si.is_mptcp = get_int_opt(fd, IPPROTO_TCP, TCP_IS_MPTCP);
		si.snd.established = get_int_opt(fd, SOL_SOCKET, SO_SNDBUF);
		si.rcv.established = get_int_opt(fd, SOL_SOCKET, SO_RCVBUF);
		while (!stop_flag) {
			ssize_t n = recv(fd, buf, RX_BUF, 0);
			c.t_recv = now_ns();
			if (n == 0) {
				eof = 1;
				break;
			}
			if (n < 0) {
				if (errno == EINTR)
					continue;
				die("recv after %" PRIu64 " blocks: %s", c.blocks, strerror(errno));
			}
			bytes += (uint64_t)n;
			if (lat_reasm_feed(&r, buf, (size_t)n, on_block, &c) != 0)
				die(r.error == LAT_E_SEQ ? "block %" PRIu64 ": sequence number %" PRIu64 " (not a mptcplab-latency stream?)"
							  : "block %" PRIu64 ": bad header (magic %08" PRIx32 ", length %" PRIu64 ")",
				    r.next_seq, r.error == LAT_E_SEQ ? r.cur.seq : (uint64_t)r.cur.magic,
				    (uint64_t)r.cur.block_len);
		}
		si.snd.at_end = get_int_opt(fd, SOL_SOCKET, SO_SNDBUF);
		si.rcv.at_end = get_int_opt(fd, SOL_SOCKET, SO_RCVBUF);
	}
	free(buf);
	rec_close(&c.rec);

	FILE *f = open_json(o->json_path);
	json_common(f, o, &si);
	json_cc(f, fd);
	fprintf(f, ",\n  \"connected\": %s, \"interrupted\": %s, \"eof\": %s, \"partial_block\": %s",
		fd >= 0 ? "true" : "false", stop_flag ? "true" : "false", eof ? "true" : "false",
		lat_reasm_at_boundary(&r) ? "false" : "true");
	fprintf(f, ",\n  \"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64, bytes, c.blocks);
	fprintf(f, ", \"first_recv_ns\": %" PRId64 ", \"last_recv_ns\": %" PRId64, c.first_recv, c.last_recv);
	if (c.blocks)
		fprintf(f, ",\n  \"delay_min_ns\": %" PRId64 ", \"delay_mean_ns\": %.0f, \"delay_max_ns\": %" PRId64,
			c.delay_min, c.delay_sum / (double)c.blocks, c.delay_max);
	if (o->records_path) {
		fprintf(f, ",\n  \"records\": ");
		json_str(f, o->records_path);
	}
	if (fd >= 0)
		json_info(f, fd, o->tcp);
	fprintf(f, ",\n  \"error\": null}\n");
	close_json(f, o->json_path);
	if (fd >= 0)
		close(fd);
	close(lfd);
	return 0;
}

/* ---------------------------------------------------------------- client */

static int connect_retry(const struct opts *o, struct sockinfo *si)
{
	struct addrinfo *ai = resolve(o->addr, o->port, 0);
	int64_t deadline = now_ns() + (int64_t)(o->connect_timeout_s * 1e9);
	for (;;) {
		int fd = new_socket(ai->ai_family, o);
		set_buffers(fd, o, si);
		if (o->bind_addr) {
			struct addrinfo *b = resolve(o->bind_addr, "0", 1);
			if (bind(fd, b->ai_addr, b->ai_addrlen) != 0)
				die("bind %s: %s", o->bind_addr, strerror(errno));
			freeaddrinfo(b);
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(ai);
			return fd;
		}
		int e = errno;
		close(fd);
		/* the server may not listen yet; anything else is final */
		if ((e != ECONNREFUSED && e != EINTR) || now_ns() > deadline || stop_flag)
			die("connect %s:%s: %s", o->addr, o->port, strerror(e));
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
}

/* Waits until the peer acknowledged everything (SIOCOUTQ = 0). */
static double drain(int fd, int *drained)
{
	int64_t t0 = now_ns();
	*drained = 0;
	while (now_ns() - t0 < DRAIN_MAX_NS) {
		int q = 0;
		if (ioctl(fd, SIOCOUTQ, &q) != 0) {
			*drained = -1; /* not supported: unknown */
			break;
		}
		if (q == 0) {
			*drained = 1;
			break;
		}
		struct timespec ts = {0, 1000000L};
		nanosleep(&ts, NULL);
	}
	return (double)(now_ns() - t0) / 1e9;
}

static int run_client(struct opts *o)
{
	struct sockinfo si = {.is_mptcp = -1};
	struct recfile rec;
	rec_open(&rec, o->records_path, LAT_SND_MAGIC, LAT_SND_REC_LEN);
	int fd = connect_retry(o, &si);
	fill_names(fd, &si);
	si.is_mptcp = get_int_opt(fd, IPPROTO_TCP, TCP_IS_MPTCP);
	si.snd.established = get_int_opt(fd, SOL_SOCKET, SO_SNDBUF);
	si.rcv.established = get_int_opt(fd, SOL_SOCKET, SO_RCVBUF);

	unsigned char *block = calloc(1, o->block);
	if (!block)
		die("out of memory");
	uint64_t k = 0, bytes = 0;
	int64_t blocked_total = 0, late_max = 0;
	uint64_t late_blocks = 0;
	int64_t t0 = now_ns();
	int64_t t_end = o->duration_s > 0 ? t0 + (int64_t)(o->duration_s * 1e9) : INT64_MAX;
	int peer_closed = 0;
	while (!stop_flag && (o->max_blocks == 0 || k < o->max_blocks)) {
		int64_t t_sched = o->rate_blocks > 0 ? lat_sched_ns(t0, k, o->rate_blocks) : now_ns();
		if (t_sched >= t_end)
			break;
		if (o->rate_blocks > 0) {
			struct timespec ts = {t_sched / 1000000000LL, t_sched % 1000000000LL};
			int rc;
			while ((rc = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL)) == EINTR && !stop_flag)
				;
			if (stop_flag)
				break;
		}
		struct lat_hdr h = {LAT_MAGIC, o->block, k, t_sched, now_ns()};
		if (o->rate_blocks <= 0)
			h.t_sched_ns = h.t_write_ns;
		else if (h.t_write_ns - t_sched > 1000000) { /* behind schedule by more than 1 ms */
			late_blocks++;
			if (h.t_write_ns - t_sched > late_max)
				late_max = h.t_write_ns - t_sched;
		}
		lat_hdr_encode(&h, block);
		size_t off = 0;
		int64_t blocked = 0;
		while (off < o->block) {
			ssize_t n = send(fd, block + off, o->block - off, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0) {
				off += (size_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				/* the send buffer is full: this wait is what the paper's
				 * application sees as send-buffer starvation */
				struct pollfd p = {fd, POLLOUT, 0};
				int64_t w0 = now_ns();
				int pr = poll(&p, 1, 200);
				blocked += now_ns() - w0;
				if (pr < 0 && errno != EINTR)
					die("poll: %s", strerror(errno));
				if (stop_flag && off == 0)
					break; /* nothing of this block went out: stop cleanly */
				continue;
			}
			if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
				peer_closed = 1;
				break;
			}
			die("send: %s", n < 0 ? strerror(errno) : "returned 0");
		}
		if (peer_closed)
			die("the server closed the connection after %" PRIu64 " blocks", k);
		if (off < o->block)
			break; /* interrupted before this block started */
		int64_t t_done = now_ns();
		unsigned char r[LAT_SND_REC_LEN];
		lat_put_u64(r, k);
		lat_put_u64(r + 8, (uint64_t)h.t_sched_ns);
		lat_put_u64(r + 16, (uint64_t)h.t_write_ns);
		lat_put_u64(r + 24, (uint64_t)t_done);
		lat_put_u64(r + 32, (uint64_t)blocked);
		rec_put(&rec, r, sizeof(r));
		blocked_total += blocked;
		bytes += o->block;
		k++;
	}
	int64_t t_last = now_ns();
	rec_close(&rec);
	int drained = 0;
	double drain_s = drain(fd, &drained);
	si.snd.at_end = get_int_opt(fd, SOL_SOCKET, SO_SNDBUF);
	si.rcv.at_end = get_int_opt(fd, SOL_SOCKET, SO_RCVBUF);

	FILE *f = open_json(o->json_path);
	json_common(f, o, &si);
	json_cc(f, fd);
	double dur = (double)(t_last - t0) / 1e9;
	fprintf(f, ",\n  \"mode\": \"%s\", \"block_bytes\": %u, \"rate_blocks_per_s\": ", o->rate_blocks > 0 ? "rate" : "bulk",
		o->block);
	if (o->rate_blocks > 0)
		fprintf(f, "%.6f", o->rate_blocks);
	else
		fprintf(f, "null");
	fprintf(f, ",\n  \"interrupted\": %s, \"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64, stop_flag ? "true" : "false", k,
		bytes);
	fprintf(f, ", \"start_ns\": %" PRId64 ", \"end_ns\": %" PRId64 ", \"duration_s\": %.6f", t0, t_last, dur);
	fprintf(f, ", \"app_rate_bps\": %.1f", dur > 0 ? (double)bytes * 8 / dur : 0.0);
	fprintf(f, ",\n  \"blocked_ns_total\": %" PRId64 ", \"late_blocks\": %" PRIu64 ", \"late_max_ns\": %" PRId64,
		blocked_total, late_blocks, late_max);
	fprintf(f, ",\n  \"drained\": %s, \"drain_s\": %.6f", drained < 0 ? "null" : drained ? "true" : "false", drain_s);
	if (o->records_path) {
		fprintf(f, ",\n  \"records\": ");
		json_str(f, o->records_path);
	}
	json_info(f, fd, o->tcp);
	fprintf(f, ",\n  \"error\": null}\n");
	close_json(f, o->json_path);

	/* end of data; wait (bounded) for the server to finish and close its side */
	shutdown(fd, SHUT_WR);
	struct pollfd p = {fd, POLLIN, 0};
	unsigned char tmp[256];
	int64_t t_close = now_ns();
	while (now_ns() - t_close < DRAIN_MAX_NS && poll(&p, 1, 100) >= 0) {
		if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && recv(fd, tmp, sizeof(tmp), MSG_DONTWAIT) <= 0)
			break;
	}
	close(fd);
	free(block);
	return 0;
}

/* ---------------------------------------------------------------- arguments */

static const char USAGE[] =
	"usage: mptcplab-latency server --port P [--listen ADDR] [--tcp] [--cc NAME] [--sndbuf B] [--rcvbuf B]\n"
	"                               [--force-buffers] --json FILE [--records FILE]\n"
	"       mptcplab-latency client --connect ADDR --port P [--bind ADDR] [--tcp] [--cc NAME] [--sndbuf B]\n"
	"                               [--rcvbuf B] [--force-buffers] [--block N]\n"
	"                               [--duration S] [--blocks N | --bytes N]\n"
	"                               [--rate-bps R | --rate-blocks R] [--connect-timeout S]\n"
	"                               --json FILE [--records FILE]\n"
	"\n"
	"Application-level latency of N-byte blocks over MPTCP (IPPROTO_MPTCP; --tcp: plain TCP).\n"
	"The server accepts one connection, prints 'ready' once listening, and records per block\n"
	"(binary, see native/latency/latrec.h): seq, scheduled and write times (sender's clock,\n"
	"CLOCK_REALTIME), and the time the read completing it returned. The client writes blocks\n"
	"with a 32-byte header back to back (bulk) or at --rate-bps (payload bit/s, header\n"
	"included) or --rate-blocks (blocks/s), for --duration seconds (default 10) or --blocks /\n"
	"--bytes (rounded up to whole blocks); its records hold per block the write time, the\n"
	"time the last send() returned and the time spent waiting for send-buffer space.\n"
	"\n"
	"  --sndbuf/--rcvbuf B  setsockopt SO_SNDBUF/SO_RCVBUF (locks the buffer: no autotuning;\n"
	"                       the kernel stores 2*B, B capped by net.core.wmem_max/rmem_max);\n"
	"                       without them the kernel autotunes (tcp_wmem/tcp_rmem)\n"
	"  --force-buffers      SO_SNDBUFFORCE/SO_RCVBUFFORCE: no net.core cap (CAP_NET_ADMIN)\n"
	"  --cc NAME            TCP_CONGESTION on the socket (MPTCP: on every subflow)\n"
	"  --block N            block size in bytes, header included (32..64 MiB, default 8192)\n"
	"  --json FILE          summary: bytes, blocks, buffers read back, MPTCP_INFO, TCP_INFO\n"
	"                       (per subflow for MPTCP), errors\n"
	"SIGINT/SIGTERM stop either end cleanly (the JSON says \"interrupted\": true).\n"
	"Exit status: 0 done, 1 error (one line on stderr, also in the JSON), 2 bad arguments.\n";

static _Noreturn void usage_exit(const char *msg)
{
	if (msg)
		fprintf(stderr, "mptcplab-latency: %s\n", msg);
	fputs(USAGE, stderr);
	exit(2);
}

static unsigned long long parse_u64(const char *name, const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *s == '-' || errno || *end) {
		fprintf(stderr, "mptcplab-latency: bad value for %s: %s\n", name, s);
		usage_exit(NULL);
	}
	return v;
}

static double parse_pos_double(const char *name, const char *s)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !(v > 0) || !isfinite(v)) {
		fprintf(stderr, "mptcplab-latency: bad value for %s: %s\n", name, s);
		usage_exit(NULL);
	}
	return v;
}

int main(int argc, char **argv)
{
	static struct opts o;
	o.sndbuf = o.rcvbuf = -1;
	o.block = 8192;
	o.connect_timeout_s = 5;
	g_opts = &o;
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(USAGE, stdout);
		return 0;
	}
	if (argc < 2)
		usage_exit("server or client?");
	if (!strcmp(argv[1], "server"))
		o.role = ROLE_SERVER;
	else if (!strcmp(argv[1], "client"))
		o.role = ROLE_CLIENT;
	else
		usage_exit("the first argument is server or client");

	enum { O_LISTEN = 256, O_CONNECT, O_PORT, O_BIND, O_TCP, O_SNDBUF, O_RCVBUF, O_FORCE, O_BLOCK, O_DURATION,
	       O_BLOCKS, O_BYTES, O_RATE_BPS, O_RATE_BLOCKS, O_JSON, O_RECORDS, O_CTIMEOUT, O_CC, O_HELP };
	static const struct option lo[] = {
		{"listen", required_argument, 0, O_LISTEN}, {"connect", required_argument, 0, O_CONNECT},
		{"port", required_argument, 0, O_PORT}, {"bind", required_argument, 0, O_BIND},
		{"tcp", no_argument, 0, O_TCP}, {"sndbuf", required_argument, 0, O_SNDBUF},
		{"rcvbuf", required_argument, 0, O_RCVBUF}, {"force-buffers", no_argument, 0, O_FORCE},
		{"block", required_argument, 0, O_BLOCK}, {"duration", required_argument, 0, O_DURATION},
		{"blocks", required_argument, 0, O_BLOCKS}, {"bytes", required_argument, 0, O_BYTES},
		{"rate-bps", required_argument, 0, O_RATE_BPS}, {"rate-blocks", required_argument, 0, O_RATE_BLOCKS},
		{"json", required_argument, 0, O_JSON}, {"records", required_argument, 0, O_RECORDS},
		{"connect-timeout", required_argument, 0, O_CTIMEOUT}, {"cc", required_argument, 0, O_CC},
		{"help", no_argument, 0, O_HELP},
		{0, 0, 0, 0}};
	unsigned long long bytes = 0;
	double rate_bps = 0;
	int c;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case O_LISTEN: o.addr = optarg; break;
		case O_CONNECT: o.addr = optarg; break;
		case O_PORT: {
			unsigned long long p = parse_u64("--port", optarg);
			if (p == 0 || p > 65535)
				usage_exit("--port must be 1..65535");
			o.port = optarg;
			break;
		}
		case O_BIND: o.bind_addr = optarg; break;
		case O_TCP: o.tcp = 1; break;
		case O_CC:
			if (!*optarg || strlen(optarg) >= 16) /* TCP_CA_NAME_MAX */
				usage_exit("--cc must be 1..15 characters");
			o.cc = optarg;
			break;
		case O_SNDBUF: o.sndbuf = (long long)parse_u64("--sndbuf", optarg); if (o.sndbuf > INT_MAX / 2) usage_exit("--sndbuf too big"); break;
		case O_RCVBUF: o.rcvbuf = (long long)parse_u64("--rcvbuf", optarg); if (o.rcvbuf > INT_MAX / 2) usage_exit("--rcvbuf too big"); break;
		case O_FORCE: o.force_buffers = 1; break;
		case O_BLOCK: {
			unsigned long long b = parse_u64("--block", optarg);
			if (b < LAT_MIN_BLOCK || b > LAT_MAX_BLOCK)
				usage_exit("--block must be 32..67108864");
			o.block = (uint32_t)b;
			break;
		}
		case O_DURATION: o.duration_s = parse_pos_double("--duration", optarg); break;
		case O_BLOCKS: o.max_blocks = parse_u64("--blocks", optarg); if (!o.max_blocks) usage_exit("--blocks must be > 0"); break;
		case O_BYTES: bytes = parse_u64("--bytes", optarg); if (!bytes) usage_exit("--bytes must be > 0"); break;
		case O_RATE_BPS: rate_bps = parse_pos_double("--rate-bps", optarg); break;
		case O_RATE_BLOCKS: o.rate_blocks = parse_pos_double("--rate-blocks", optarg); break;
		case O_JSON: o.json_path = optarg; break;
		case O_RECORDS: o.records_path = optarg; break;
		case O_CTIMEOUT: o.connect_timeout_s = parse_pos_double("--connect-timeout", optarg); break;
		case O_HELP: fputs(USAGE, stdout); return 0;
		default: usage_exit(NULL);
		}
	}
	if (optind != argc)
		usage_exit("unexpected argument");
	if (!o.port)
		usage_exit("--port is required");
	if (!o.json_path)
		usage_exit("--json is required");
	if (o.role == ROLE_CLIENT) {
		if (!o.addr)
			usage_exit("--connect is required");
		if (rate_bps > 0 && o.rate_blocks > 0)
			usage_exit("--rate-bps and --rate-blocks exclude each other");
		if (bytes && o.max_blocks)
			usage_exit("--bytes and --blocks exclude each other");
		if (bytes)
			o.max_blocks = (bytes + o.block - 1) / o.block;
		if (rate_bps > 0)
			o.rate_blocks = rate_bps / (8.0 * o.block);
		if (o.duration_s == 0 && o.max_blocks == 0)
			o.duration_s = 10;
	} else {
		if (!o.addr)
			o.addr = "0.0.0.0";
		if (o.bind_addr || bytes || o.max_blocks || rate_bps > 0 || o.rate_blocks > 0 || o.duration_s > 0)
			usage_exit("server: --bind, --blocks, --bytes, --rate-*, --duration are client options");
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: blocking calls return EINTR and the loops look at stop_flag */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* pacing wakes up on time, not up to 50 us late (default timer slack) */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	return o.role == ROLE_SERVER ? run_server(&o) : run_client(&o);
}
