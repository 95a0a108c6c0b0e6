/*
 * The machine's floor for the work a prototype's players do, measured beside the benchmark
 * (netstick bench prototypes): what the same work costs with nothing but the system calls.
 *
 *   udp_floor cpu PAIRS ROUNDS SIZE     one process, PAIRS pairs of UDP sockets on loopback: each
 *                                       round every pair makes one round trip of SIZE bytes
 *                                       (sendto, recvfrom, sendto, recvfrom: one system call per
 *                                       datagram, both halves in this process); prints the CPU
 *                                       time per round trip (getrusage), in microseconds
 *   udp_floor pingpong COUNT SIZE CPU_A CPU_B
 *                                       two processes (the echo pinned to CPU_A, the sender to
 *                                       CPU_B, -1: not pinned): COUNT round trips of SIZE bytes, one
 *                                       at a time, after 1000 not counted; prints p50 and p99 of
 *                                       the round trip (CLOCK_MONOTONIC), in microseconds, and the
 *                                       sender's CPU time per round trip (getrusage): a player's
 *                                       work when every datagram wakes a sleeping peer
 *
 * Output: one JSON object on standard output. Exit 1 with a message on standard error when a
 * system call fails.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WARMUP 1000
#define MAX_SIZE 65000

static void die(const char *what) {
    fprintf(stderr, "udp_floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int bound_socket(struct sockaddr_in *addr) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) die("socket");
    memset(addr, 0, sizeof(*addr));
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)addr, sizeof(*addr)) < 0) die("bind");
    socklen_t len = sizeof(*addr);
    if (getsockname(fd, (struct sockaddr *)addr, &len) < 0) die("getsockname");
    return fd;
}

static double cpu_s(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) < 0) die("getrusage");
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void pin(int cpu) {
    if (cpu < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) < 0) die("sched_setaffinity");
}

static void round_trip(int from, int to, struct sockaddr_in *to_addr, struct sockaddr_in *from_addr,
                       char *buf, int size) {
    if (sendto(from, buf, size, 0, (struct sockaddr *)to_addr, sizeof(*to_addr)) != size) die("sendto");
    if (recvfrom(to, buf, MAX_SIZE, 0, NULL, NULL) != size) die("recvfrom");
    if (sendto(to, buf, size, 0, (struct sockaddr *)from_addr, sizeof(*from_addr)) != size) die("sendto");
    if (recvfrom(from, buf, MAX_SIZE, 0, NULL, NULL) != size) die("recvfrom");
}

static int cpu_mode(int pairs, long rounds, int size) {
    int *player = calloc(pairs, sizeof(int)), *server = calloc(pairs, sizeof(int));
    struct sockaddr_in *pa = calloc(pairs, sizeof(*pa)), *sa = calloc(pairs, sizeof(*sa));
    char *buf = calloc(1, MAX_SIZE);
    if (!player || !server || !pa || !sa || !buf) die("calloc");
    for (int i = 0; i < pairs; i++) {
        player[i] = bound_socket(&pa[i]);
        server[i] = bound_socket(&sa[i]);
    }
    for (int w = 0; w < WARMUP; w++) round_trip(player[w % pairs], server[w % pairs], &sa[w % pairs], &pa[w % pairs], buf, size);
    double c0 = cpu_s(), t0 = now_us();
    for (long r = 0; r < rounds; r++)
        for (int i = 0; i < pairs; i++) round_trip(player[i], server[i], &sa[i], &pa[i], buf, size);
    double cpu = cpu_s() - c0, wall = now_us() - t0;
    long n = rounds * pairs;
    printf("{\"round_trips\": %ld, \"cpu_us_per_round_trip\": %.3f, \"wall_us_per_round_trip\": %.3f}\n",
           n, cpu * 1e6 / n, wall / n);
    return 0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int pingpong_mode(int count, int size, int cpu_a, int cpu_b) {
    struct sockaddr_in ea, sa;
    int echo = bound_socket(&ea), sender = bound_socket(&sa);
    char *buf = calloc(1, MAX_SIZE);
    if (!buf) die("calloc");
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        pin(cpu_a);
        close(sender);
        for (;;) {
            struct sockaddr_in from;
            socklen_t len = sizeof(from);
            ssize_t n = recvfrom(echo, buf, MAX_SIZE, 0, (struct sockaddr *)&from, &len);
            if (n < 0) die("recvfrom");
            if (sendto(echo, buf, n, 0, (struct sockaddr *)&from, len) != n) die("sendto");
        }
    }
    pin(cpu_b);
    close(echo);
    double *rtt = calloc(count, sizeof(double));
    if (!rtt) die("calloc");
    double c0 = 0;
    for (int i = -WARMUP; i < count; i++) {
        if (i == 0) c0 = cpu_s();
        double t = now_us();
        if (sendto(sender, buf, size, 0, (struct sockaddr *)&ea, sizeof(ea)) != size) die("sendto");
        if (recvfrom(sender, buf, MAX_SIZE, 0, NULL, NULL) != size) die("recvfrom");
        if (i >= 0) rtt[i] = now_us() - t;
    }
    double cpu = cpu_s() - c0;
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    qsort(rtt, count, sizeof(double), cmp);
    printf("{\"round_trips\": %d, \"rtt_p50_us\": %.3f, \"rtt_p99_us\": %.3f, "
           "\"sender_cpu_us_per_round_trip\": %.3f}\n",
           count, rtt[count / 2], rtt[(int)(count * 0.99)], cpu * 1e6 / count);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "cpu") == 0) {
        int pairs = atoi(argv[2]), size = atoi(argv[4]);
        long rounds = atol(argv[3]);
        if (pairs >= 1 && pairs <= 4096 && rounds >= 1 && size >= 1 && size <= MAX_SIZE)
            return cpu_mode(pairs, rounds, size);
    }
    if (argc == 6 && strcmp(argv[1], "pingpong") == 0) {
        int count = atoi(argv[2]), size = atoi(argv[3]);
        if (count >= 100 && size >= 1 && size <= MAX_SIZE)
            return pingpong_mode(count, size, atoi(argv[4]), atoi(argv[5]));
    }
    fprintf(stderr, "usage: udp_floor cpu PAIRS(1-4096) ROUNDS(>=1) SIZE(1-65000) | "
                    "pingpong COUNT(>=100) SIZE(1-65000) CPU_A CPU_B\n");
    return 2;
}
