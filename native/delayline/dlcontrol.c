/* The control file of a running delay line (see dlcontrol.h). */
#include "dlcontrol.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DL_CONTROL_MAX_US (3600ULL * 1000000)

/* written to FILE.tmp then renamed: a reader never sees half a line */
int dl_control_write(const char *path, long pid, uint64_t delay_us, uint64_t jitter_us)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -1;
	int bad = fprintf(f, "%ld %" PRIu64 " %" PRIu64 "\n", pid, delay_us, jitter_us) < 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

int dl_control_read(const char *path, long *pid, uint64_t *delay_us, uint64_t *jitter_us)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int n = fscanf(f, "%ld %" SCNu64 " %" SCNu64, pid, delay_us, jitter_us);
	fclose(f);
	if (n != 3 || *pid <= 0 || *delay_us > DL_CONTROL_MAX_US || *jitter_us > DL_CONTROL_MAX_US)
		return -1;
	return 0;
}
