/* mptcplab-delayline-ctl FILE DELAY_US JITTER_US [TRACE OFFSET_MS]: give a running
 * delay line a new delay, and with TRACE switch its trace stage to that trace file,
 * OFFSET_MS into it, now (the file is checked here first, as the delay line reads it). Reads the delay line's pid from its control file (dlcontrol.h), checks that
 * this pid is a delay line started with that control file (a stale pid must not
 * signal another process), writes the new values and sends SIGUSR1. Run in the
 * delay line's node, so the pid is in the right pid namespace. Exit status 0 when
 * the signal was sent, 1 otherwise (with the reason on stderr). */
#include "delaysched.h"
#include "dlcontrol.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > 3600ULL * 1000000)
		return -1;
	*out = v;
	return 0;
}

/* does /proc/PID/cmdline hold "--control" followed by PATH? */
static int is_our_delayline(long pid, const char *path)
{
	char fn[64], buf[8192];
	snprintf(fn, sizeof(fn), "/proc/%ld/cmdline", pid);
	FILE *f = fopen(fn, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (size_t i = 0; i < n;) {
		const char *arg = buf + i;
		size_t len = strlen(arg);
		if (!strcmp(arg, "--control") && i + len + 1 < n && !strcmp(buf + i + len + 1, path))
			return 1;
		i += len + 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t delay_us, jitter_us, old_d, old_j, offset_ms = 0, old_off = 0;
	long pid;
	static char old_trace[DL_CONTROL_PATH_MAX];
	const char *trace = argc == 6 ? argv[4] : NULL;
	if ((argc != 4 && argc != 6) || parse(argv[2], &delay_us) || parse(argv[3], &jitter_us) ||
	    (trace && (!*trace || parse(argv[5], &offset_ms)))) {
		fprintf(stderr, "usage: mptcplab-delayline-ctl CONTROL_FILE DELAY_US JITTER_US [TRACE_FILE OFFSET_MS]\n");
		return 1;
	}
	if (trace) {
		uint32_t *ms = NULL, n = 0;
		char err[512];
		if (dl_trace_load(trace, &ms, &n, err, sizeof(err)) < 0) {
			fprintf(stderr, "mptcplab-delayline-ctl: trace %s\n", err);
			return 1;
		}
		free(ms);
	}
	if (dl_control_read(argv[1], &pid, &old_d, &old_j, old_trace, &old_off) < 0) {
		fprintf(stderr, "mptcplab-delayline-ctl: cannot read %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (!is_our_delayline(pid, argv[1])) {
		fprintf(stderr, "mptcplab-delayline-ctl: pid %ld is not the delay line of %s\n", pid, argv[1]);
		return 1;
	}
	if (dl_control_write(argv[1], pid, delay_us, jitter_us, trace, offset_ms) < 0 || kill((pid_t)pid, SIGUSR1) < 0) {
		fprintf(stderr, "mptcplab-delayline-ctl: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	printf("delay %" PRIu64 " -> %" PRIu64 " us, jitter %" PRIu64 " -> %" PRIu64 " us", old_d, delay_us, old_j,
	       jitter_us);
	if (trace)
		printf(", trace -> %s from %" PRIu64 " ms", trace, offset_ms);
	printf("\n");
	return 0;
}
