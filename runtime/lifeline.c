/* A role started by a launcher (alpha run, alpha-tui) stops when that launcher ends, whatever
 * ended it: a SIGKILL it could not catch, a crash, a closed terminal. The launcher passes the
 * reading end of a pipe whose writing end only it holds, named by ALPHA_LIFELINE_FD. No byte is
 * ever written; when the launcher's process is gone the kernel closes the writing end and the
 * read below returns end of file. A parent-death signal would not do: it follows the thread
 * that started the role, and alpha-tui starts roles from a worker thread that ends long before
 * they do. The pipe also works unchanged for a role run under qemu-user. */
#include "lifeline.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "refusal.h"

static void *watch(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char byte;
    for (;;) {
        ssize_t n = read(fd, &byte, 1);
        if (n == 0)
            break;
        if (n < 0 && errno != EINTR)
            return NULL; /* checked to be a pipe at start-up; nothing else can end it */
    }
    static const char line[] = "alpha: the launcher that started this role has ended; stopping\n";
    ssize_t ignored = write(2, line, sizeof line - 1);
    (void)ignored;
    _exit(ALPHA_EXIT_LAUNCHER_GONE); /* nothing is published half-way: captures are renamed whole */
}

void lifeline_watch(void)
{
    const char *text = getenv("ALPHA_LIFELINE_FD");
    if (text == NULL)
        return;
    size_t digits = strspn(text, "0123456789");
    if (digits == 0 || digits > 9 || text[digits] != '\0')
        refuse(REFUSAL_USAGE, "ALPHA_LIFELINE_FD is '%.32s', not a descriptor number", text);
    int fd = 0;
    for (size_t i = 0; i < digits; i++)
        fd = fd * 10 + (text[i] - '0');
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))
        refuse(REFUSAL_USAGE, "ALPHA_LIFELINE_FD names descriptor %d, which is not an open pipe",
               fd);
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 16384);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int error = pthread_create(&thread, &attr, watch, (void *)(intptr_t)fd);
    pthread_attr_destroy(&attr);
    if (error != 0)
        refuse(REFUSAL_THREADS_UNAVAILABLE, "the thread that watches the launcher could not start: "
               "%s", strerror(error));
}
