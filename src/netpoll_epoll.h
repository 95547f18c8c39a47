/* SPDX-License-Identifier: MIT */
/*
 * netpoll_epoll.h - what netpoll_epoll.c offers the rest of the runtime:
 * the network poller's epoll backend.
 */
#ifndef GORT_NETPOLL_EPOLL_H
#define GORT_NETPOLL_EPOLL_H

#include "defs.h"
#include "netpoll.h"
#include "sched.h"

/* Set the backend up (0 or -errno), and close it at teardown. */
GORT_HIDDEN int gort__netpoll_init(void);
GORT_HIDDEN void gort__netpoll_uninit(void);
/* Add fd, whose pollDesc is pd, for reading and writing (0 or -errno);
 * take it out. */
GORT_HIDDEN int gort__netpoll_open(int fd, struct polldesc *pd);
GORT_HIDDEN int gort__netpoll_rearm(int fd, struct polldesc *pd);
GORT_HIDDEN void gort__netpoll_close(int fd);
/* Wake the M blocked in the backend's wait.  Mirrors netpollBreak. */
GORT_HIDDEN void gort__netpoll_break(void);
/* Collect Gs whose descriptors are ready, waiting up to delay ns (0: no
 * wait, < 0: until an event or a break); RUNNABLE, linked in q. */
GORT_HIDDEN int32_t gort__netpoll(int64_t delay, struct gqueue *q);
/* Poll without blocking until `end`, the break or an event that readies
 * a G, while every P is idle: the Gs readied (0 for a break alone), or -1
 * when nothing came. */
GORT_HIDDEN int32_t gort__netpoll_spin(int64_t end, struct gqueue *q);

#endif /* GORT_NETPOLL_EPOLL_H */
