/* SPDX-License-Identifier: MIT */
/*
 * sema.h - what sema.c offers the rest of the runtime: the runtime's
 * semaphores and notify lists.
 */
#ifndef GORT_SEMA_H
#define GORT_SEMA_H

#include "../include/gort.h"
#include "defs.h"

/* Semaphores (sema.c).  Mirrors sema.go.  semacquire1 parks until it can
 * take a unit from *addr; lifo queues the caller first among the waiters
 * on addr (a mutex waiter that has waited before).  semrelease adds a unit
 * and wakes the first waiter; with handoff the unit goes straight to that
 * waiter.  Both must run on a goroutine.  semrelease returns NULL, or the
 * proxy it dequeued (below), which only a mutex's semaphore holds. */
GORT_HIDDEN void gort__semacquire1(uint32_t *addr, bool lifo,
                                   uint32_t reason);
GORT_HIDDEN void gort__semacquire(uint32_t *addr, uint32_t reason);
GORT_HIDDEN void *gort__semrelease(uint32_t *addr, bool handoff);
GORT_HIDDEN void gort__semafini(void);

/* Waits with a deadline.  The caller has pushed the G's deadline timer
 * (chan.c's, gort__dl_arm) to at; the wait publishes itself in the G's
 * struct gdl (its sync), and the timer's function calls its cancel, which
 * takes the waiter out of its queue and readies it unless a wake-up came
 * first.  semacquire_until returns whether it took a unit (false: at
 * passed first); notifylistwait_until whether it was notified, and takes the
 * tombstone a timed-out waiter may leave (made by notifytomb_alloc before
 * the ticket is taken; freed or kept by the wait, see sema.c). */
struct g;
struct dlwait {
    void (*cancel)(struct g *gp, struct dlwait *w);
};
GORT_HIDDEN bool gort__semacquire_until(uint32_t *addr, bool lifo,
                                        uint32_t reason, int64_t at,
                                        void *proxy);
/* A proxy for semacquire_until (NULL when out of memory).  A waiter whose
 * deadline passes leaves its proxy queued in its place, keeping its
 * count; the release that dequeues the proxy takes a unit for it and
 * returns it to its caller (semrelease's value, otherwise NULL), which
 * acts on the gone waiter's behalf and frees it (gort_mutex_lock_until).
 * A wait that ends otherwise leaves the proxy to its caller to free. */
GORT_HIDDEN void *gort__semproxy_alloc(void);
GORT_HIDDEN void *gort__notifytomb_alloc(void);
GORT_HIDDEN bool gort__notifylistwait_until(gort_cond *c, uint32_t ticket,
                                            int64_t at, void *tomb);
/* Notify lists (sema.c), on the storage of a gort_cond.  Mirrors
 * notifyList: add hands out a ticket (call it before dropping the user's
 * lock), wait parks until that ticket is notified, notifyone wakes the
 * oldest unnotified ticket, notifyall every ticket handed out.  The
 * list's lock ranks with the semaphore roots (object locks). */
GORT_HIDDEN uint32_t gort__notifylistadd(gort_cond *c);
GORT_HIDDEN void gort__notifylistwait(gort_cond *c, uint32_t ticket);
GORT_HIDDEN void gort__notifylistnotifyone(gort_cond *c);
GORT_HIDDEN void gort__notifylistnotifyall(gort_cond *c);

#endif /* GORT_SEMA_H */
