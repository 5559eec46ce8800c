/* Run-time control of a running delay line (mptcplab timeline: link_change of a
 * link's delay). The control file holds one line, "PID DELAY_US JITTER_US": the
 * delay line writes it when it starts (--control FILE); mptcplab-delayline-ctl
 * rewrites the values and sends SIGUSR1; the delay line re-reads the file at its
 * next loop iteration and delays the packets it reads from then on by the new
 * values (packets already held keep theirs, and release order is kept). */
#ifndef DLCONTROL_H
#define DLCONTROL_H

#include <stdint.h>
#include <sys/types.h>

int dl_control_write(const char *path, long pid, uint64_t delay_us, uint64_t jitter_us);
int dl_control_read(const char *path, long *pid, uint64_t *delay_us, uint64_t *jitter_us);

#endif
