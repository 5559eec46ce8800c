/* The control file of a running delay line (see dlcontrol.h). */
#include "dlcontrol.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DL_CONTROL_MAX_US (3600ULL * 1000000)

/* written to FILE.tmp then renamed: a reader never sees half a line */
int dl_control_write(const char *path, long pid, uint64_t delay_us, uint64_t jitter_us, const char *trace,
		     uint64_t trace_offset_ms)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	/* a path the second line cannot hold whole (a newline ends it) */
	if (trace && (strlen(trace) >= DL_CONTROL_PATH_MAX || strchr(trace, '\n')))
		return -1;
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -1;
	int bad = fprintf(f, "%ld %" PRIu64 " %" PRIu64 "\n", pid, delay_us, jitter_us) < 0;
	if (trace && *trace)
		bad |= fprintf(f, "trace %" PRIu64 " %s\n", trace_offset_ms, trace) < 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int dl_control_read(const char *path, long *pid, uint64_t *delay_us, uint64_t *jitter_us, char *trace,
		    uint64_t *trace_offset_ms)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	if (trace)
		trace[0] = 0;
	char line[DL_CONTROL_PATH_MAX + 64];
	int ok = fgets(line, sizeof(line), f) != NULL &&
		 sscanf(line, "%ld %" SCNu64 " %" SCNu64, pid, delay_us, jitter_us) == 3;
	if (ok && fgets(line, sizeof(line), f)) {
		uint64_t off = 0;
		int at = 0;
		size_t l = strlen(line);
		if (l && line[l - 1] == '\n')
			line[--l] = 0;
		/* "trace OFFSET PATH": the path is the rest of the line, spaces included */
		if (sscanf(line, "trace %" SCNu64 " %n", &off, &at) != 1 || at == 0 || !line[at])
			ok = 0;
		else if (trace) {
			snprintf(trace, DL_CONTROL_PATH_MAX, "%s", line + at);
			if (trace_offset_ms)
				*trace_offset_ms = off;
		}
	}
	fclose(f);
	if (!ok || *pid <= 0 || *delay_us > DL_CONTROL_MAX_US || *jitter_us > DL_CONTROL_MAX_US)
		return -1;
	return 0;
}
