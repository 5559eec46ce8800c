/* mptcp-smoke: one MPTCP connection over loopback inside the boot check's initramfs
 * (images/kernel/boot-check.sh), with nothing else there to open one: no Python, no
 * iperf3, no iproute2 with `ip mptcp`.
 *
 * A listener and a client, both IPPROTO_MPTCP, in one process (the client in a child);
 * the client sends BYTES bytes and the server counts them. MPTCP_INFO on the accepted
 * socket answers only when the connection is MPTCP and did not fall back: that is the
 * proof, printed as one line the host parses:
 *
 *   mptcp-smoke: ok bytes=N mptcp_info=yes
 *   mptcp-smoke: FAIL <why>
 *
 * Built static by boot-check.sh (the initramfs has no libc). Written by hand: a few
 * socket calls, no library does this for a bare initramfs.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef SOL_MPTCP
#define SOL_MPTCP 284
#endif
#define MPTCP_INFO_OPT 1 /* MPTCP_INFO, include/uapi/linux/mptcp.h (5.16+) */
#define PORT 5201
#define BYTES (4 << 20)

static int fail(const char *what)
{
	printf("mptcp-smoke: FAIL %s: %s\n", what, strerror(errno));
	fflush(stdout);
	return 1;
}

static int client(void)
{
	static char buf[65536];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP);
	long left = BYTES;

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return 2;
	memset(buf, 'm', sizeof(buf));
	while (left > 0) {
		ssize_t n = write(fd, buf, left < (long)sizeof(buf) ? (size_t)left : sizeof(buf));

		if (n <= 0)
			return 3;
		left -= n;
	}
	close(fd);
	return 0;
}

int main(void)
{
	static char buf[65536];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	unsigned char info[256];
	socklen_t len = sizeof(info);
	long got = 0;
	int one = 1, status = 0, info_ok;
	int ls = socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP);
	int c;
	pid_t pid;

	if (ls < 0)
		return fail("socket(IPPROTO_MPTCP)");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 1) < 0)
		return fail("bind/listen");
	pid = fork();
	if (pid < 0)
		return fail("fork");
	if (pid == 0)
		_exit(client());
	c = accept(ls, NULL, NULL);
	if (c < 0)
		return fail("accept");
	info_ok = getsockopt(c, SOL_MPTCP, MPTCP_INFO_OPT, info, &len) == 0;
	for (;;) {
		ssize_t n = read(c, buf, sizeof(buf));

		if (n < 0)
			return fail("read");
		if (n == 0)
			break;
		got += n;
	}
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("mptcp-smoke: FAIL client exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return 1;
	}
	if (got != BYTES) {
		printf("mptcp-smoke: FAIL received %ld of %d bytes\n", got, BYTES);
		return 1;
	}
	if (!info_ok) {
		printf("mptcp-smoke: FAIL MPTCP_INFO refused (fallback to TCP?): %s\n", strerror(errno));
		return 1;
	}
	printf("mptcp-smoke: ok bytes=%ld mptcp_info=yes\n", got);
	return 0;
}
