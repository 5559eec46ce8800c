/* Run-time control of a running delay line (mptcplab timeline: link_change of a
 * link's delay, or of its trace). The control file holds one line, "PID DELAY_US
 * JITTER_US", and optionally a second, "trace OFFSET_MS PATH" (PATH to the end of
 * the line): the delay line writes the first when it starts (--control FILE);
 * mptcplab-delayline-ctl rewrites the values and sends SIGUSR1; the delay line
 * re-reads the file at its next loop iteration and delays the packets it reads
 * from then on by the new values (packets already held keep theirs, and release
 * order is kept). A second line switches its trace stage to PATH, OFFSET_MS in,
 * at that moment (dl_sched_switch_trace); without one the trace stays. */
#ifndef DLCONTROL_H
#define DLCONTROL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DL_CONTROL_PATH_MAX 4096

/* trace: NULL or "" for none (the delay line keeps its trace) */
int dl_control_write(const char *path, long pid, uint64_t delay_us, uint64_t jitter_us, const char *trace,
		     uint64_t trace_offset_ms);
/* trace (DL_CONTROL_PATH_MAX bytes, may be NULL) gets the second line's path, or "" */
int dl_control_read(const char *path, long *pid, uint64_t *delay_us, uint64_t *jitter_us, char *trace,
		    uint64_t *trace_offset_ms);

#endif
