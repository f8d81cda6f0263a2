/* Bare TCP round trip on loopback: the floor for one exchange of a gradient piece.
 *
 *   pingpong [BYTES [ITERS [WARMUP]]]      defaults: 9640 (2,410 float32), 20000, 2000
 *
 * The process listens on 127.0.0.1 (an ephemeral port) and forks; the child connects and
 * echoes. The parent sends BYTES, reads BYTES back, ITERS times after WARMUP untimed round
 * trips, both sockets blocking with TCP_NODELAY. It prints one JSON line:
 *   {"bytes":9640,"iters":20000,"seconds":...,"us_per_round_trip":...}
 * A baseline for bench/round.py, not product code. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void nodelay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        die("setsockopt TCP_NODELAY");
}

static void send_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, buf, n, 0);
        if (k <= 0)
            die("send");
        buf += k;
        n -= (size_t)k;
    }
}

static void recv_all(int fd, char *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = recv(fd, buf, n, 0);
        if (k <= 0)
            die("recv");
        buf += k;
        n -= (size_t)k;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t bytes = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 9640;
    long iters = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
    long warmup = argc > 3 ? strtol(argv[3], NULL, 10) : 2000;
    if (bytes == 0 || iters <= 0 || warmup < 0) {
        fprintf(stderr, "usage: pingpong [BYTES [ITERS [WARMUP]]]\n");
        return 2;
    }

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0)
        die("socket");
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 1) != 0 ||
        getsockname(listener, (struct sockaddr *)&addr, &len) != 0)
        die("bind/listen");

    char *buf = malloc(bytes);
    if (!buf)
        die("malloc");
    for (size_t i = 0; i < bytes; i++)
        buf[i] = (char)(i * 131u);

    pid_t child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) { /* the echo side */
        close(listener);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
            die("connect");
        nodelay(fd);
        for (long i = 0; i < warmup + iters; i++) {
            recv_all(fd, buf, bytes);
            send_all(fd, buf, bytes);
        }
        close(fd);
        _exit(0);
    }

    int fd = accept(listener, NULL, NULL);
    if (fd < 0)
        die("accept");
    nodelay(fd);
    for (long i = 0; i < warmup; i++) {
        send_all(fd, buf, bytes);
        recv_all(fd, buf, bytes);
    }
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        send_all(fd, buf, bytes);
        recv_all(fd, buf, bytes);
    }
    double seconds = now_s() - t0;
    close(fd);
    close(listener);
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "pingpong: the echo side failed\n");
        return 1;
    }
    printf("{\"bytes\":%zu,\"iters\":%ld,\"seconds\":%.9f,\"us_per_round_trip\":%.3f}\n", bytes,
           iters, seconds, seconds * 1e6 / (double)iters);
    free(buf);
    return 0;
}
