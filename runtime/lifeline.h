/* A role dies with the launcher that started it, however the launcher ends (lifeline.c). */
#ifndef ALPHA_LIFELINE_H
#define ALPHA_LIFELINE_H

#define ALPHA_EXIT_LAUNCHER_GONE 4 /* the launcher's lifeline closed: stopped with it */

/* With ALPHA_LIFELINE_FD set, watch that descriptor from a thread of its own and exit with
 * ALPHA_EXIT_LAUNCHER_GONE when it reaches its end; without it, nothing. */
void lifeline_watch(void);

#endif
