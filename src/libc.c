/* SPDX-License-Identifier: MIT */
/*
 * libc.c - the table of the C library's calls that gort-hook replaces
 * (libc.h says why the runtime calls them through it).
 */
#include "libc.h"

#include <fcntl.h>
#include <netdb.h>
#include <sys/select.h>
#include <unistd.h>

struct gort__libc gort__libc = {
    .read = read,
    .write = write,
    .readv = readv,
    .writev = writev,
    .recvfrom = recvfrom,
    .sendto = sendto,
    .recvmsg = recvmsg,
    .sendmsg = sendmsg,
    .accept4 = accept4,
    .connect = connect,
    .socket = socket,
    .pipe2 = pipe2,
    .close = close,
    .dup2 = dup2,
    .dup3 = dup3,
    .fcntl = fcntl,
    .getsockopt = getsockopt,
    .setsockopt = setsockopt,
    .poll = poll,
    .pselect = pselect,
    .epoll_wait = epoll_wait,
    .nanosleep = nanosleep,
    .clock_nanosleep = clock_nanosleep,
    .getaddrinfo = getaddrinfo,
    .getnameinfo = getnameinfo,
    .gethostbyname2_r = gethostbyname2_r,
};
