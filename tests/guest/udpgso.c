/*
 * UDP segmentation offload, from inside the test guest: one UDP_SEGMENT
 * send, and a receiver that reports every datagram it gets. The guest has
 * no compiler and no scripting language, so this is built on the host
 * (tests/guest/test_ixgbe_ptp.py) as a tiny static x86-64 Linux program
 * without a C library, and copied in through the serial console.
 *
 *   udpgso send ADDR PORT TOTAL GSO_SIZE   TOTAL bytes in one send
 *   udpgso recv ADDR PORT                  "<len> ok|bad" per datagram,
 *                                          until 2 s pass without one
 *                                          (20 s before the first)
 *
 * ADDR is the address in hexadecimal, 8 digits (IPv4) or 32 (IPv6); recv
 * binds to it. The payload's byte i is (i * 7 + (i >> 8)) & 0xff, and a
 * received datagram is "ok" when it continues that sequence from where the
 * previous one ended.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

typedef unsigned long size_t;

#define AF_INET         2
#define AF_INET6        10
#define SOCK_DGRAM      2
#define SOL_SOCKET      1
#define SO_RCVTIMEO     20
#define SOL_UDP         17
#define UDP_SEGMENT     103

#define NR_WRITE        1
#define NR_SOCKET       41
#define NR_SENDTO       44
#define NR_RECVFROM     45
#define NR_BIND         49
#define NR_SETSOCKOPT   54
#define NR_EXIT_GROUP   231

#define MAX_TOTAL       65000

struct sockaddr_in46 {
    unsigned short family;
    unsigned char port[2];
    union {
        struct {
            unsigned char addr[4];
            unsigned char zero[8];
        } in;
        struct {
            unsigned char flowinfo[4];
            unsigned char addr[16];
            unsigned char scope_id[4];
        } in6;
    } u;
};

static unsigned char buf[MAX_TOTAL + 1];

static long sys(long nr, long a, long b, long c, long d, long e, long f)
{
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;

    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
                       "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

void *memset(void *s, int c, size_t n);
void *memset(void *s, int c, size_t n)
{
    unsigned char *p = s;

    while (n--) {
        *p++ = c;
    }
    return s;
}

static void out(const char *s)
{
    size_t n = 0;

    while (s[n]) {
        n++;
    }
    sys(NR_WRITE, 1, (long)s, n, 0, 0, 0);
}

static void out_num(unsigned long v)
{
    char s[24];
    int i = sizeof(s) - 1;

    s[i] = 0;
    do {
        s[--i] = '0' + v % 10;
        v /= 10;
    } while (v);
    out(s + i);
}

static __attribute__((noreturn)) void quit(int code)
{
    sys(NR_EXIT_GROUP, code, 0, 0, 0, 0, 0);
    __builtin_unreachable();
}

static __attribute__((noreturn)) void fail(const char *what, long err)
{
    out("udpgso: ");
    out(what);
    out(" failed: errno ");
    out_num(-err);
    out("\n");
    quit(1);
}

static unsigned long num(const char *s)
{
    unsigned long v = 0;

    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s++ - '0');
    }
    return v;
}

static int hexval(char c)
{
    return c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0';
}

/* The socket address of hex address a and port; returns its length */
static long sockaddr(struct sockaddr_in46 *sa, const char *a, unsigned port)
{
    size_t n = 0;
    unsigned char *dst;

    while (a[n]) {
        n++;
    }
    memset(sa, 0, sizeof(*sa));
    sa->family = n == 32 ? AF_INET6 : AF_INET;
    sa->port[0] = port >> 8;
    sa->port[1] = port;
    dst = n == 32 ? sa->u.in6.addr : sa->u.in.addr;
    for (size_t i = 0; i + 1 < n; i += 2) {
        dst[i / 2] = hexval(a[i]) << 4 | hexval(a[i + 1]);
    }
    return n == 32 ? 28 : 16;
}

static unsigned char pattern(unsigned long i)
{
    return (i * 7 + (i >> 8)) & 0xff;
}

static int run(int argc, char **argv)
{
    struct sockaddr_in46 sa;
    long salen, fd, r;

    if (argc < 4) {
        out("usage: udpgso send ADDR PORT TOTAL GSO | recv ADDR PORT\n");
        return 2;
    }
    salen = sockaddr(&sa, argv[2], num(argv[3]));
    fd = sys(NR_SOCKET, sa.family, SOCK_DGRAM, 0, 0, 0, 0);
    if (fd < 0) {
        fail("socket", fd);
    }
    if (argv[1][0] == 's' && argc == 6) {
        unsigned long total = num(argv[4]);
        int gso = num(argv[5]);

        if (total > MAX_TOTAL) {
            return 2;
        }
        for (unsigned long i = 0; i < total; i++) {
            buf[i] = pattern(i);
        }
        r = sys(NR_SETSOCKOPT, fd, SOL_UDP, UDP_SEGMENT, (long)&gso,
                sizeof(gso), 0);
        if (r < 0) {
            fail("setsockopt(UDP_SEGMENT)", r);
        }
        r = sys(NR_SENDTO, fd, (long)buf, total, 0, (long)&sa, salen);
        if (r < 0) {
            fail("sendto", r);
        }
        return 0;
    }
    if (argv[1][0] == 'r') {
        /*
         * Up to 20 s for the first datagram (the sender starts when the
         * harness next gets to it, seconds later on a loaded host), then
         * 2 s after each: the end of the burst.
         */
        long tv[2] = { 20, 0 };
        unsigned long got = 0;

        r = sys(NR_BIND, fd, (long)&sa, salen, 0, 0, 0);
        if (r < 0) {
            fail("bind", r);
        }
        sys(NR_SETSOCKOPT, fd, SOL_SOCKET, SO_RCVTIMEO, (long)tv,
            sizeof(tv), 0);
        out("ready\n");
        while ((r = sys(NR_RECVFROM, fd, (long)buf, sizeof(buf), 0, 0, 0)) >=
               0) {
            int ok = 1;

            for (long i = 0; i < r; i++) {
                ok &= buf[i] == pattern(got + i);
            }
            if (!got) {
                tv[0] = 2;
                sys(NR_SETSOCKOPT, fd, SOL_SOCKET, SO_RCVTIMEO, (long)tv,
                    sizeof(tv), 0);
            }
            got += r;
            out_num(r);
            out(ok ? " ok\n" : " bad\n");
        }
        return 0;
    }
    return 2;
}

void start_c(long *sp);
void start_c(long *sp)
{
    quit(run((int)sp[0], (char **)(sp + 1)));
}

__asm__(".globl _start\n"
        "_start:\n"
        "    xor %rbp, %rbp\n"
        "    mov %rsp, %rdi\n"
        "    and $-16, %rsp\n"
        "    call start_c\n"
        "    hlt\n");
